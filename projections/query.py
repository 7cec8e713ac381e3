"""A small, backend-neutral query over one view table: the shape every store read takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec


@dataclass(frozen=True, slots=True)
class In:
    """A ``where`` value matching any of ``values``."""

    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class JsonContains:
    """A ``where`` value for a column holding a JSON object: the object contains ``value``.

    Containment is PostgreSQL's ``@>`` for objects: every key of ``value`` is present, a
    nested object contains the nested value, anything else is equal. Backends without
    JSON operators may test nested objects and arrays for equality instead.
    """

    value: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Lookup:
    """Rows whose ``columns`` equal one of ``keys`` (each a tuple in ``columns``' order),
    each row found by its own index seek: the keys are joined to the table one at a time,
    never matched by scanning what the ``where`` equalities select.

    Reads of many rows by key (a page's channel values or writes) take this shape, so
    their cost follows how many keys they name, not how many rows the thread holds. The
    ``where`` equalities and ``columns`` must lead the table's primary key (SQL backends
    seek it with them).
    """

    columns: tuple[str, ...]
    keys: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True, slots=True)
class ViewQuery:
    """Rows of ``table`` whose columns equal ``where``, ordered, keyset-paged and limited.

    ``after`` is a keyset: only rows whose ``order_by`` tuple sorts after it (before it when
    ``descending``). ``columns`` picks the columns returned (all when ``None``).
    ``with_blob`` names a column holding the digest of a blob of the row's own tenant:
    each row then also carries that blob's bytes under ``"blob"`` (None when there is no
    such blob), read in the same query, so a reader needs no second round trip for them.
    ``lookup`` keeps only the rows whose columns equal one of its keys (`Lookup`).
    """

    table: str
    where: Mapping[str, Any] = field(default_factory=dict)
    order_by: tuple[str, ...] = ()
    descending: bool = False
    after: tuple[Any, ...] | None = None
    limit: int | None = None
    columns: tuple[str, ...] | None = None
    with_blob: str | None = None
    lookup: Lookup | None = None


def row_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether ``row`` satisfies every condition of ``where``."""
    for name, wanted in where.items():
        value = row.get(name)
        if isinstance(wanted, In):
            if value not in wanted.values:
                return False
        elif isinstance(wanted, JsonContains):
            if not isinstance(value, str) or not json_contains(
                msgspec.json.decode(value), dict(wanted.value)
            ):
                return False
        elif value != wanted:
            return False
    return True


def json_contains(document: Any, wanted: Any) -> bool:
    """Whether the JSON value ``document`` contains ``wanted`` (PostgreSQL's ``@>`` on
    objects; lists contain every element of the wanted list; scalars are equal, with a
    boolean never equal to a number)."""
    if isinstance(wanted, dict):
        return isinstance(document, dict) and all(
            key in document and json_contains(document[key], value)
            for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return isinstance(document, list) and all(
            any(json_contains(item, value) for item in document) for value in wanted
        )
    if isinstance(wanted, bool) or isinstance(document, bool):
        return type(wanted) is type(document) and wanted == document
    return bool(document == wanted)
