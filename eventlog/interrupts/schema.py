"""A small JSON Schema subset for interrupt answers (no dependency, no network, no $ref).

Understood keywords: ``type`` (a name or a list of names), ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties`` (boolean or schema), ``items``
(a schema), ``minItems``/``maxItems``, ``minLength``/``maxLength``, ``minimum``/
``maximum``, ``anyOf``/``oneOf``/``allOf``. Annotations (``title``, ``description``,
``default``, ``$schema``, ``examples``) are ignored. Any other keyword makes the schema
unsupported: `check_schema` refuses it when the batch is created, so an answer is never
accepted against a rule this validator silently skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

_ANNOTATIONS = frozenset({"title", "description", "default", "$schema", "examples", "$comment"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def check_schema(schema: Any, path: str = "#") -> str | None:
    """None when ``schema`` uses only understood keywords; else what is wrong, and where."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, Mapping):
        return f"{path}: a schema must be an object or a boolean"
    for keyword, value in schema.items():
        problem = _check_keyword(keyword, value, f"{path}/{keyword}")
        if problem is not None:
            return problem
    return None


def _check_keyword(keyword: str, value: Any, path: str) -> str | None:
    if keyword in _ANNOTATIONS or keyword in ("enum", "const", "required"):
        return None
    if keyword == "type":
        names = value if isinstance(value, list) else [value]
        unknown = [name for name in names if name not in _TYPES]
        return f"{path}: unknown type {unknown[0]!r}" if unknown else None
    if keyword == "properties":
        if not isinstance(value, Mapping):
            return f"{path}: must be an object"
        return _first(check_schema(sub, f"{path}/{name}") for name, sub in value.items())
    if keyword in ("additionalProperties", "items"):
        return check_schema(value, path)
    if keyword in ("anyOf", "oneOf", "allOf"):
        if not isinstance(value, list) or not value:
            return f"{path}: must be a non-empty array"
        return _first(check_schema(sub, f"{path}/{n}") for n, sub in enumerate(value))
    if keyword in ("minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"{path}: must be a number"
    return f"{path}: keyword {keyword!r} is not supported"


def validate(value: Any, schema: Any, path: str = "$") -> str | None:
    """None when ``value`` satisfies ``schema``; else the first violation and where."""
    if schema is True:
        return None
    if schema is False:
        return f"{path}: no value is allowed"
    for keyword, rule in schema.items():
        check = _VALIDATORS.get(keyword)
        if check is not None:
            problem = check(value, rule, schema, path)
            if problem is not None:
                return problem
    return None


def _first(problems: Any) -> str | None:
    return next((problem for problem in problems if problem is not None), None)


def _type(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    names = rule if isinstance(rule, list) else [rule]
    if any(_TYPES[name](value) for name in names):
        return None
    return f"{path}: expected {' or '.join(names)}"


def _enum(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    return None if any(_same(value, option) for option in rule) else f"{path}: not allowed"


def _const(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    return None if _same(value, rule) else f"{path}: must equal {rule!r}"


def _same(left: Any, right: Any) -> bool:
    return (type(left) is type(right) and left == right) or (
        _TYPES["number"](left) and _TYPES["number"](right) and left == right
    )


def _properties(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return None
    return _first(
        validate(value[name], sub, f"{path}.{name}") for name, sub in rule.items() if name in value
    )


def _required(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return None
    missing = [name for name in rule if name not in value]
    return f"{path}: missing {missing[0]!r}" if missing else None


def _additional(value: Any, rule: Any, schema: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return None
    known = schema.get("properties", {})
    extra = [name for name in value if name not in known]
    return _first(validate(value[name], rule, f"{path}.{name}") for name in extra)


def _items(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    if not isinstance(value, list | tuple):
        return None
    return _first(validate(item, rule, f"{path}[{n}]") for n, item in enumerate(value))


def _bound(sized: Callable[[Any], bool], measure: Callable[[Any], Any], at_least: bool,
           what: str) -> Callable[[Any, Any, Any, str], str | None]:
    def check(value: Any, rule: Any, _s: Any, path: str) -> str | None:
        if not sized(value):
            return None
        ok = measure(value) >= rule if at_least else measure(value) <= rule
        return None if ok else f"{path}: {what} {'≥' if at_least else '≤'} {rule}"

    return check


def _any_of(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    matches = any(validate(value, sub, path) is None for sub in rule)
    return None if matches else f"{path}: matches none of anyOf"


def _one_of(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    matches = sum(validate(value, sub, path) is None for sub in rule)
    return None if matches == 1 else f"{path}: matches {matches} of oneOf, not exactly one"


def _all_of(value: Any, rule: Any, _s: Any, path: str) -> str | None:
    return _first(validate(value, sub, path) for sub in rule)


_is_array = _TYPES["array"]
_is_string = _TYPES["string"]
_is_number = _TYPES["number"]

_VALIDATORS: dict[str, Callable[[Any, Any, Any, str], str | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "minItems": _bound(_is_array, len, True, "items"),
    "maxItems": _bound(_is_array, len, False, "items"),
    "minLength": _bound(_is_string, len, True, "length"),
    "maxLength": _bound(_is_string, len, False, "length"),
    "minimum": _bound(_is_number, lambda v: v, True, "value"),
    "maximum": _bound(_is_number, lambda v: v, False, "value"),
    "anyOf": _any_of,
    "oneOf": _one_of,
    "allOf": _all_of,
}
