"""The JSON Schema checks behind `eventlog.interrupts.schema`, on the `jsonschema` library.

Imported the first time a schema is checked: jsonschema with its meta-schemas and format
checkers takes ~150 ms to import, which a process that never meets a schema should not
pay. The format checkers are jsonschema's own for every format of the specification,
except ``iri`` and ``iri-reference``: those are `eventlog.interrupts.iri`'s, because
jsonschema's non-GPL one (``rfc3987_syntax``) builds a Lark grammar at import (1.2 s) and
refuses IRIs that RFC 3987 allows (an IP literal with a port, a character outside the
Basic Multilingual Plane). The project no longer installs it; where something else did,
jsonschema still imports it, and only that first check pays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cache, lru_cache
from typing import Any

import msgspec
import referencing.jsonschema
from jsonschema import FormatChecker, exceptions, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable, Unretrievable

from eventlog.interrupts.iri import is_iri, is_iri_reference

_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a ``$ref`` key inside them is no reference."""
_CACHED = 256
"""How many distinct schemas keep their check's answer and their built validator."""
_IRI_DIALECTS = (validators.Draft7Validator, validators.Draft201909Validator,
                 validators.Draft202012Validator)
"""The dialects that define the ``iri`` and ``iri-reference`` formats."""


@lru_cache(maxsize=_CACHED)
def checked(encoded: bytes) -> str | None:
    """`eventlog.interrupts.schema.check_schema` of a schema, by its canonical JSON."""
    schema = msgspec.json.decode(encoded)
    cls = _dialect(schema)
    if isinstance(cls, str):
        return cls
    meta = validators.validator_for(cls.META_SCHEMA, default=cls)
    checker = meta(cls.META_SCHEMA, registry=Registry(), format_checker=format_checker(meta))
    error = exceptions.best_match(checker.iter_errors(schema))  # a bad regex too
    if error is not None:
        return f"{_pointer(error.absolute_path)}: {error.message}"
    return _unresolved(schema, cls)


def violation(value: Any, encoded: bytes, path: str) -> str | None:
    """`eventlog.interrupts.schema.validate` against a schema, by its canonical JSON."""
    validator = _validator(encoded)
    try:
        error = exceptions.best_match(validator.iter_errors(value))
    except (Unresolvable, NoSuchResource, Unretrievable) as unresolved:
        return f"{path}: the schema's reference cannot be resolved: {unresolved}"
    if error is None:
        return None
    return f"{_path(path, error.absolute_path)}: {error.message}"


@cache
def format_checker(cls: type[Validator]) -> FormatChecker:
    """The dialect's format checker, with this package's ``iri`` and ``iri-reference``."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(cls.FORMAT_CHECKER.checkers)
    if cls in _IRI_DIALECTS:
        checker.checks("iri", raises=ValueError)(_strings_only(is_iri))
        checker.checks("iri-reference", raises=ValueError)(_strings_only(is_iri_reference))
    return checker


def _strings_only(check: Callable[[str], bool]) -> Callable[[object], bool]:
    """A format applies to strings: any other value satisfies it (as jsonschema's do)."""
    return lambda instance: not isinstance(instance, str) or check(instance)


@lru_cache(maxsize=_CACHED)
def _validator(encoded: bytes) -> Validator:
    """The validator of one schema (by its canonical JSON), local references only."""
    schema = msgspec.json.decode(encoded)
    found = _dialect(schema)
    # check_schema refuses an unknown dialect; a batch created before it did (the subset
    # read $schema as an annotation) is still answered, under 2020-12 as then.
    cls = validators.Draft202012Validator if isinstance(found, str) else found
    validator: Validator = cls(schema, registry=Registry(), format_checker=format_checker(cls))
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
