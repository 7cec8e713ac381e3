"""A small, backend-neutral query over one view table: the shape every store read takes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
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

    def __post_init__(self) -> None:
        # A key named twice finds its row once, as the memory views' set of keys does; a
        # join to a key list with a repeat would return the row twice.
        object.__setattr__(self, "keys", tuple(dict.fromkeys(self.keys)))


@dataclass(frozen=True, slots=True)
class Related:
    """Rows of another view table read with each row of a query, of the row's tenant:
    ``table``'s rows whose ``on`` columns equal the row's columns of the same names and,
    with ``pairs``, whose two ``pairs`` columns equal one (key, value) of the JSON object
    (of strings) the row holds in its column ``pairs_from``. Each row then carries them,
    as dicts of ``columns`` (and ``"blob"``, the bytes of the tenant's blob whose digest
    ``with_blob`` names, None when there is none), in a list under ``name``.

    A thread's checkpoint reads its channel values (by the versions its ``channels``
    column names) and its pending writes this way: on PostgreSQL in the same statement
    as the checkpoint, each related row sought by the table's primary key, which ``on``
    and ``pairs`` must lead; elsewhere by `Lookup` queries after it (`read_related`).
    The query names ``tenant_id`` as an equality and returns the ``on`` and
    ``pairs_from`` columns.
    """

    name: str
    table: str
    on: tuple[str, ...]
    columns: tuple[str, ...]
    pairs: tuple[str, str] | None = None
    pairs_from: str | None = None
    with_blob: str | None = None


MAX_GUESSED_BLOBS = 10_000
"""The most digests a query may ask to read with its rows (`ViewQuery.blobs`)."""


@dataclass(frozen=True, slots=True)
class ViewQuery:
    """Rows of ``table`` whose columns equal ``where``, ordered, keyset-paged and limited.

    ``after`` is a keyset: only rows whose ``order_by`` tuple sorts after it (before it when
    ``descending``). ``columns`` picks the columns returned (all when ``None``).
    ``with_blob`` names a column holding the digest of a blob of the row's own tenant:
    each row then also carries that blob's bytes under ``"blob"`` (None when there is no
    such blob), read in the same query, so a reader needs no second round trip for them.
    ``lookup`` keeps only the rows whose columns equal one of its keys (`Lookup`).
    ``related`` reads each row's rows of other tables with it (`Related`).
    ``split`` is a plan, not a filter: ``(column, index)``, a limited read is answered
    as the merge of the rows where the text ``column`` is empty, read through the
    primary key, and of the others (``length(column) > 0``), read through ``index`` (a
    partial index of them), each half in order and limited on its own; the rows are the
    same without it.
    ``blobs`` is a reader's guess at what it reads next: digests of blobs of the row's
    own tenant, read in the same statement where the backend reads `related` rows in it
    (PostgreSQL), each row then carrying those found under ``"blobs"`` (digest to bytes;
    read once per row: meant for a read of one row). Elsewhere, and on an encrypted log,
    it is ignored and rows carry no ``"blobs"``.
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
    related: tuple[Related, ...] = ()
    split: tuple[str, str] | None = None
    blobs: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class RowRequired:
    """A precondition of an append: a row of ``table`` whose columns equal ``where``
    (plain values) must exist when the append commits, else nothing is written and the
    append raises ``InvalidInput(field, reason)``.

    A store states what its decision rests on (a checkpoint's parent is a checkpoint of
    its session), and the backend checks it inside the append's own transaction or
    statement: no read before the write, no second round trip.
    """

    table: str
    where: Mapping[str, Any]
    field: str
    reason: str


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


Run = Callable[[ViewQuery], Awaitable[list[dict[str, Any]]]]
"""A backend's own reading of a `ViewQuery` without ``related``."""
RELATED_CHUNK = 500
"""Keys per `Lookup` query of `read_related`."""


async def read_related(query: ViewQuery, run: Run) -> list[dict[str, Any]]:
    """``query`` answered by ``run``: its rows, then each `Related` as `Lookup` queries
    of up to `RELATED_CHUNK` keys (however many rows there are), each key one seek, the
    related tables side by side (one round trip's wait where ``run`` has a pool).

    What backends that cannot read the related rows in the same statement run."""
    rows = await run(replace(query, related=()))

    async def attach(related: Related) -> None:
        steps = _attaching(related, query.where["tenant_id"], rows)
        with contextlib.suppress(StopIteration):
            lookup = next(steps)
            while True:
                lookup = steps.send(await run(lookup))

    await asyncio.gather(*(attach(related) for related in query.related))
    return rows


RunNow = Callable[[ViewQuery], list[dict[str, Any]]]
"""Runs one `ViewQuery` without related tables, synchronously: its rows."""


def read_related_now(query: ViewQuery, run: RunNow) -> list[dict[str, Any]]:
    """`read_related` for a synchronous ``run`` (one connection on one thread, all of it in
    one job: SQLite's reader), the related tables one after the other."""
    rows = run(replace(query, related=()))
    for related in query.related:
        steps = _attaching(related, query.where["tenant_id"], rows)
        with contextlib.suppress(StopIteration):
            lookup = next(steps)
            while True:
                lookup = steps.send(run(lookup))
    return rows


def _attaching(related: Related, tenant_id: Any, rows: list[dict[str, Any]]
               ) -> Generator[ViewQuery, list[dict[str, Any]], None]:
    """Yields the lookups of ``related`` for ``rows``, is sent each one's rows, and attaches
    them to ``rows`` (under the related name) when done."""
    key_columns = related.on + (related.pairs or ())
    wanted = [_related_keys(related, row) for row in rows]
    keys = sorted({key for row_keys in wanted for key in row_keys})
    extra = tuple(name for name in key_columns if name not in related.columns)
    found: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for start in range(0, len(keys), RELATED_CHUNK):
        lookup = _lookup(related, tenant_id, key_columns, keys[start:start + RELATED_CHUNK])
        for row in (yield lookup):
            key = tuple(row[name] for name in key_columns)
            for name in extra:
                del row[name]
            found.setdefault(key, []).append(row)
    for row, row_keys in zip(rows, wanted, strict=True):
        row[related.name] = [item for key in row_keys for item in found.get(key, ())]


def _related_keys(related: Related, row: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    base = tuple(row[name] for name in related.on)
    if related.pairs is None or related.pairs_from is None:
        return [base]
    pairs = msgspec.json.decode(row[related.pairs_from], type=dict[str, str])
    return [(*base, key, value) for key, value in pairs.items()]


def _lookup(related: Related, tenant_id: Any, columns: tuple[str, ...],
            keys: Sequence[tuple[Any, ...]]) -> ViewQuery:
    """A query seeking ``keys`` (values of ``columns``) in the related table: the leading
    columns every key shares (one thread, one namespace) become equalities, so the key
    set sent is only what differs."""
    shared = 0
    while shared < len(columns) - 1 and len({key[shared] for key in keys}) == 1:
        shared += 1
    where = {"tenant_id": tenant_id, **{columns[n]: keys[0][n] for n in range(shared)}}
    wanted = related.columns + tuple(name for name in columns if name not in related.columns)
    return ViewQuery(related.table, where, columns=wanted, with_blob=related.with_blob,
                     lookup=Lookup(columns[shared:],
                                   tuple(key[shared:] for key in keys)))
