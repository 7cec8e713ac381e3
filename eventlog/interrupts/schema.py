"""JSON Schema for interrupt answers: the `jsonschema` library, its references kept local.

A schema is checked when its batch is created (`check_schema`): against its dialect's
meta-schema (``$schema`` when it names one, else Draft 2020-12), and every ``$ref`` must
resolve inside the schema itself (``$defs``, anchors, embedded ``$id`` resources). Nothing
is ever fetched: the registry the validator uses has no ``retrieve``, so a reference to
another document (``https://…``, ``other.json``) is refused when the batch is created,
naming where it sits, instead of being looked up on the network (jsonschema's default
registry would fetch it, with a warning) or failing later, at every answer.

An answer is checked against it (`validate`) with format assertion on: ``email``,
``date-time``, ``uri`` and every other format of the specification are checked
(``jsonschema[format-nongpl]`` brings their checkers); a format the specification does not
define (OpenAPI's ``int32``, ``binary``…) is an annotation, as the specification says.
Keywords the dialect does not define are annotations too (``x-…`` extensions, OpenAPI's
``nullable``).

Both return None or one message that names where the problem is: a JSON pointer into the
schema (``#/properties/x/minLength: …``) or a path into the value (``payload.items[2]:
…``), the most relevant error when there are several (`jsonschema.exceptions.best_match`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import msgspec
import referencing.jsonschema
from jsonschema import exceptions, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable, Unretrievable

_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a ``$ref`` key inside them is no reference."""
_encoder = msgspec.json.Encoder(order="sorted")
_CACHED = 256
"""How many distinct schemas keep their check's answer and their built validator."""


def check_schema(schema: Any) -> str | None:
    """None when ``schema`` is a valid schema of its dialect whose references all resolve
    within it; else what is wrong, at a JSON pointer into the schema (``#/…``).

    Checking against the 2020-12 meta-schema takes jsonschema about 2 ms, so the answer is
    kept for the last schemas checked (an application creates batches with the same few)."""
    if not isinstance(schema, Mapping | bool):
        return "#: a schema must be an object or a boolean"
    try:
        encoded = _encoder.encode(schema)
    except (TypeError, msgspec.EncodeError) as error:
        return f"#: a schema must be JSON: {error}"
    return _checked(encoded)


@lru_cache(maxsize=_CACHED)
def _checked(encoded: bytes) -> str | None:
    schema = msgspec.json.decode(encoded)
    cls = _dialect(schema)
    if isinstance(cls, str):
        return cls
    meta = validators.validator_for(cls.META_SCHEMA, default=cls)
    checker = meta(cls.META_SCHEMA, registry=Registry(), format_checker=meta.FORMAT_CHECKER)
    error = exceptions.best_match(checker.iter_errors(schema))  # a bad regex too
    if error is not None:
        return f"{_pointer(error.absolute_path)}: {error.message}"
    return _unresolved(schema, cls)


def validate(value: Any, schema: Any, path: str = "$") -> str | None:
    """None when ``value`` satisfies ``schema`` (one `check_schema` accepted); else the
    most relevant violation, at ``path`` followed by where in the value (``.name``,
    ``[index]``)."""
    validator = _validator(_encoder.encode(schema))
    try:
        error = exceptions.best_match(validator.iter_errors(value))
    except (Unresolvable, NoSuchResource, Unretrievable) as unresolved:
        return f"{path}: the schema's reference cannot be resolved: {unresolved}"
    if error is None:
        return None
    return f"{_path(path, error.absolute_path)}: {error.message}"


@lru_cache(maxsize=_CACHED)
def _validator(encoded: bytes) -> Validator:
    """The validator of one schema (by its canonical JSON), local references only."""
    schema = msgspec.json.decode(encoded)
    found = _dialect(schema)
    # check_schema refuses an unknown dialect; a batch created before it did (the subset
    # read $schema as an annotation) is still answered, under 2020-12 as then.
    cls = validators.Draft202012Validator if isinstance(found, str) else found
    validator: Validator = cls(schema, registry=Registry(),
                               format_checker=cls.FORMAT_CHECKER)
    return validator


def _dialect(schema: Any) -> type[Validator] | str:
    """The validator class of the schema's ``$schema`` (Draft 2020-12 without one), or
    what is wrong with it."""
    if not isinstance(schema, Mapping) or "$schema" not in schema:
        return validators.Draft202012Validator
    dialect = schema["$schema"]
    try:
        referencing.jsonschema.specification_with(str(dialect))
    except referencing.jsonschema.UnknownDialect:
        return f"#/$schema: {dialect!r} is not a JSON Schema dialect this library knows"
    cls: type[Validator] = validators.validator_for(schema)
    return cls


def _unresolved(schema: Any, cls: type[Validator]) -> str | None:
    """The first ``$ref`` that does not resolve within the schema, named by its pointer."""
    specification = referencing.jsonschema.specification_with(
        cls.META_SCHEMA["$id"], default=referencing.jsonschema.DRAFT202012)
    root: Resource[Any] = specification.create_resource(schema)
    resolver = Registry().with_resource(root.id() or "", root).resolver(root.id() or "")
    for pointer, ref, scope in _refs(schema, "#", resolver, specification):
        try:
            scope.lookup(ref)
        except (Unresolvable, NoSuchResource, Unretrievable):
            return (f"{pointer}: {ref!r} does not resolve within the schema (only local "
                    "references are followed: nothing is fetched)")
    return None


def _refs(
    node: Any, pointer: str, resolver: Any, specification: Any,
) -> Iterator[tuple[str, str, Any]]:
    """Each ``$ref`` in the schema: its pointer, its value and the resolver of its scope
    (an embedded ``$id`` opens a scope of its own)."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _refs(item, f"{pointer}/{index}", resolver, specification)
        return
    if not isinstance(node, Mapping):
        return
    if "$id" in node and isinstance(node["$id"], str) and pointer != "#":
        resolver = resolver.in_subresource(specification.create_resource(node))
    for key, value in node.items():
        where = f"{pointer}/{_escape(str(key))}"
        if key == "$ref" and isinstance(value, str):
            yield where, value, resolver
        elif key not in _DATA_KEYWORDS:
            yield from _refs(value, where, resolver, specification)


def _pointer(parts: Any) -> str:
    return "#" + "".join(f"/{_escape(str(part))}" for part in parts)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _path(path: str, parts: Any) -> str:
    return path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                          for part in parts)
