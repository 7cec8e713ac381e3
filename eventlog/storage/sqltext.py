"""The SQL text both SQL backends run, written once: applying a view change, answering a
view query, and the event and blob rows of an append.

Each builder takes ``param``, which records one value and returns its placeholder (``$n``
on PostgreSQL, ``?`` on SQLite), and calls it in the order the values appear in the text,
so the caller collects the parameters as it builds. Where the dialects truly differ (a
list membership, a JSON containment test) a `SqlDialect` says how. Backends cache the
text by the shape it depends on; the matching ``*_params`` functions give the values in
the same order without building text again.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Collection, Generator, Hashable, Mapping, Sequence
from typing import Any

import msgspec

from eventlog.storage.requests import AppendRequest
from projections.changes import (
    AT_POSITION,
    Change,
    Delete,
    InsertIfAbsent,
    Update,
    Upsert,
    change_shape,
    change_values,
)
from projections.query import In, JsonContains, Lookup, ViewQuery

Param = Callable[[Any], str]
"""Records one value and returns the placeholder that stands for it in the text."""

EVENT_COLUMNS = (
    "tenant_id", "stream_id", "stream_version", "event_id", "type", "data", "recorded_at",
    "prev_hash", "hash",
)


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def on_conflict(names: Sequence[str], keys: Sequence[str], *, keep_existing: bool) -> str:
    """The ``ON CONFLICT`` clause of a view upsert: overwrite the non-key columns named,
    or leave an existing row as it is (``keep_existing``, or when only keys are named)."""
    updates = [f"{quote(n)} = EXCLUDED.{quote(n)}" for n in names if n not in keys]
    clause = f" ON CONFLICT ({', '.join(map(quote, keys))}) DO "
    if keep_existing or not updates:
        return clause + "NOTHING"
    return clause + "UPDATE SET " + ", ".join(updates)


# -- an append's rows -------------------------------------------------------------------


def event_insert(table: str, param: Param, values: Sequence[Any]) -> str:
    """Insert one event row (``values`` in `EVENT_COLUMNS` order), returning its position."""
    placeholders = ", ".join(param(value) for value in values)
    return (f"INSERT INTO {table} ({', '.join(EVENT_COLUMNS)}) VALUES ({placeholders}) "
            "RETURNING position")


def blob_add(table: str, param: Param, tenant_id: str, digest: bytes, payload: bytes,
             count: int) -> str:
    """Store a blob, or add ``count`` references to the stored one."""
    values = ", ".join(param(v) for v in (tenant_id, digest, len(payload), count, payload))
    return (f"INSERT INTO {table} AS t (tenant_id, digest, size, refs, data) VALUES ({values}) "
            "ON CONFLICT (tenant_id, digest) DO UPDATE SET refs = t.refs + EXCLUDED.refs")


def blob_release(table: str, param: Param, tenant_id: str, digest: bytes, count: int) -> str:
    """Drop ``count`` references to a blob (then `blob_purge` deletes it at zero)."""
    return (f"UPDATE {table} SET refs = refs - {param(count)} "
            f"WHERE tenant_id = {param(tenant_id)} AND digest = {param(digest)}")


def blob_purge(table: str, param: Param, tenant_id: str, digest: bytes) -> str:
    """Delete a blob nothing references any more."""
    return (f"DELETE FROM {table} WHERE tenant_id = {param(tenant_id)} "
            f"AND digest = {param(digest)} AND refs <= 0")


# -- view changes ------------------------------------------------------------------------


def change_sql(change: Change, table: str, keys: Sequence[str], param: Param) -> str:
    """The statement that applies ``change`` to ``table`` (whose primary key is ``keys``).

    ``param`` is called with each of `change_values` in order; a value may be
    `AT_POSITION`, which ``param`` turns into the event's position (or a subquery for it).
    """
    if isinstance(change, Upsert | InsertIfAbsent):
        names = list(change.row)
        values = ", ".join(param(change.row[name]) for name in names)
        sql = f"INSERT INTO {table} ({', '.join(map(quote, names))}) VALUES ({values})"
        return sql + on_conflict(names, keys, keep_existing=isinstance(change, InsertIfAbsent))
    if isinstance(change, Update):
        sets = ", ".join(f"{quote(n)} = {param(v)}" for n, v in change.values.items())
        where = " AND ".join(f"{quote(n)} = {param(v)}" for n, v in change.key.items())
        return f"UPDATE {table} SET {sets} WHERE {where}"
    assert isinstance(change, Delete)
    where = " AND ".join(f"{quote(n)} = {param(v)}" for n, v in change.where.items())
    return f"DELETE FROM {table} WHERE {where}"


def change_params(change: Change) -> list[Any]:
    """The values `change_sql` places, in its order."""
    return [value for _, value in change_values(change)]


Statement = tuple[str, list[Any], bool]
"""One statement of a sequential append: its text, its values, and whether it returns the
value the append needs next (an event's position)."""


class ChangeStatements:
    """The statement applying a view change and its values, the text cached by the
    change's shape (`change_shape`): what a sequential append runs for each change, and
    what `eventlog.log.SpilledViews` runs on its temporary file."""

    def __init__(self, tables: Mapping[str, str], keys: Mapping[str, Sequence[str]],
                 new_param: Callable[[], Numbered | Positional]) -> None:
        self._tables = tables
        self._keys = keys
        self._new_param = new_param
        self._text: dict[Hashable, str] = {}

    def __call__(self, change: Change, position: int) -> tuple[str, list[Any]]:
        """The text and values of ``change``, `AT_POSITION` standing for ``position``."""
        shape = change_shape(change)
        sql = self._text.get(shape)
        if sql is None:
            sql = self._text[shape] = change_sql(
                change, self._tables[change.table], self._keys[change.table],
                self._new_param())
        return sql, [position if value is AT_POSITION else value
                     for value in change_params(change)]


class SequentialAppend:
    """An append as a sequence of statements inside the caller's transaction: each event
    row (returning its position), each view change, each blob reference change.

    Both SQL backends run it: `statements` is a generator the backend drives with its own
    connection (asyncpg, sqlite3, SQLAlchemy), sending back each event's position. Text is
    cached by shape, so a repeated shape costs only its values.
    """

    def __init__(self, tables: Mapping[str, str], keys: Mapping[str, Sequence[str]],
                 new_param: Callable[[], Numbered | Positional]) -> None:
        self._new_param = new_param
        self._text: dict[Hashable, str] = {}
        self._changes = ChangeStatements(tables, keys, new_param)
        names = tables["events"], tables["blobs"]
        self._event_sql = self._cached("event", lambda p: event_insert(
            names[0], p, [None] * len(EVENT_COLUMNS)))
        self._blob_add_sql = self._cached("blob+", lambda p: blob_add(
            names[1], p, "", b"", b"", 0))
        self._blob_release_sql = self._cached("blob-", lambda p: blob_release(
            names[1], p, "", b"", 0))
        self._blob_purge_sql = self._cached("blob0", lambda p: blob_purge(names[1], p, "", b""))

    def statements(self, request: AppendRequest) -> Generator[Statement, Any, list[int]]:
        """The statements of ``request``; send each event's position back; returns them.

        Blob rows are touched in digest order, whatever order the request lists them in:
        two appends locking shared blob rows in opposite orders (two session deletes whose
        checkpoints share states) would otherwise deadlock on PostgreSQL.
        """
        tenant = request.tenant_id
        positions: list[int] = []
        for pending in request.events:
            values = [tenant, request.stream_id, pending.version, pending.event_id,
                      pending.type, pending.data, pending.recorded_at, pending.prev_hash,
                      pending.hash]
            positions.append(int((yield self._event_sql, values, True)))
        for index, change in request.changes:
            yield (*self._changes(change, positions[index]), False)
        for digest in sorted(request.blob_adds.keys() | request.blob_releases.keys()):
            if digest in request.blob_adds:
                payload, count = request.blob_adds[digest]
                yield self._blob_add_sql, [tenant, digest, len(payload), count, payload], False
            if digest in request.blob_releases:
                count = request.blob_releases[digest]
                yield self._blob_release_sql, [count, tenant, digest], False
                yield self._blob_purge_sql, [tenant, digest], False
        return positions

    def _cached(self, name: str, build: Callable[[Param], str]) -> str:
        self._text[name] = build(self._new_param())
        return self._text[name]


# -- view queries ------------------------------------------------------------------------


class SqlDialect(abc.ABC):
    """What a view query's text needs to know of its dialect."""

    @abc.abstractmethod
    def member(self, column: str, wanted: In, param: Param) -> str:
        """The condition that ``column`` is one of ``wanted.values``."""

    @abc.abstractmethod
    def member_params(self, wanted: In) -> list[Any]:
        """The values `member` places, in its order."""

    @abc.abstractmethod
    def contains(self, column: str, wanted: JsonContains, param: Param) -> str:
        """The condition that the JSON object in ``column`` contains ``wanted.value``."""

    @abc.abstractmethod
    def contains_params(self, wanted: JsonContains) -> list[Any]:
        """The values `contains` places, in its order."""

    @abc.abstractmethod
    def condition_shape(self, value: Any) -> Hashable:
        """What the text of one ``where`` condition depends on, beyond its column."""

    def order_term(self, column: str, *, descending: bool, nullable: bool) -> str:
        """One ORDER BY term, with NULL after every value (before them, descending)."""
        return f"{column} DESC" if descending else column

    lateral: bool = False
    """Whether a lookup seeks inside a ``LATERAL`` subquery (else a ``CROSS JOIN`` that
    the dialect's planner always runs key first)."""

    nests: bool = False
    """Whether a query's `Related` rows are read in its own statement (`related_sql`),
    else by `Lookup` queries after it (`projections.query.read_related`)."""

    @abc.abstractmethod
    def key_set(self, lookup: Lookup, param: Param) -> tuple[str, str]:
        """A `Lookup`'s keys (at least one) as a relation ``k`` of columns ``k0``, ``k1``
        …: the ``WITH`` clause to place before the ``SELECT`` (or ``""``) and the ``FROM``
        item."""

    @abc.abstractmethod
    def key_set_params(self, lookup: Lookup) -> list[Any]:
        """The values `key_set` places, in its order."""

    @abc.abstractmethod
    def key_set_shape(self, lookup: Lookup) -> Hashable:
        """What the text of `key_set` depends on, beyond the lookup's columns."""


class PostgresDialect(SqlDialect):
    """``= ANY($n)`` over one array; ``@>`` over one JSON text."""

    def member(self, column: str, wanted: In, param: Param) -> str:
        return f"{column} = ANY({param(list(wanted.values))})"

    def member_params(self, wanted: In) -> list[Any]:
        return [list(wanted.values)]

    def contains(self, column: str, wanted: JsonContains, param: Param) -> str:
        return f"{column}::jsonb @> {param(_json(wanted.value))}::jsonb"

    def contains_params(self, wanted: JsonContains) -> list[Any]:
        return [_json(wanted.value)]

    def condition_shape(self, value: Any) -> Hashable:
        return type(value).__name__

    lateral = True
    nests = True

    def key_set(self, lookup: Lookup, param: Param) -> tuple[str, str]:
        arrays = ", ".join(f"{param(values)}::{kind}[]" for values, kind in zip(
            self.key_set_params(lookup), self.key_set_shape(lookup), strict=True))
        names = ", ".join(f"k{n}" for n in range(len(lookup.columns)))
        return "", f"unnest({arrays}) AS k({names})"

    def key_set_params(self, lookup: Lookup) -> list[Any]:
        return [[key[n] for key in lookup.keys] for n in range(len(lookup.columns))]

    def key_set_shape(self, lookup: Lookup) -> tuple[str, ...]:
        return tuple(_pg_type(value) for value in lookup.keys[0])


class SqliteDialect(SqlDialect):
    """``IN (?, …)`` with one placeholder per value; JSON1's ``json_each`` per key, the key
    compared literally (scalars compare by JSON type and value, so a boolean is never a
    number; nested objects and arrays compare as their minified JSON text)."""

    def member(self, column: str, wanted: In, param: Param) -> str:
        return f"{column} IN ({', '.join(param(value) for value in wanted.values)})"

    def member_params(self, wanted: In) -> list[Any]:
        return list(wanted.values)

    def contains(self, column: str, wanted: JsonContains, param: Param) -> str:
        if not wanted.value:
            return "1 = 1"
        return " AND ".join(
            self._key_equals(column, key, value, param) for key, value in wanted.value.items()
        )

    def contains_params(self, wanted: JsonContains) -> list[Any]:
        collected = Positional()
        for key, value in wanted.value.items():
            self._key_equals("", key, value, collected)
        return collected.values

    def order_term(self, column: str, *, descending: bool, nullable: bool) -> str:
        # SQLite sorts NULL before every value; PostgreSQL, and so we, after.
        if not nullable:
            return super().order_term(column, descending=descending, nullable=False)
        return f"{column} DESC NULLS FIRST" if descending else f"{column} NULLS LAST"

    def key_set(self, lookup: Lookup, param: Param) -> tuple[str, str]:
        names = ", ".join(f"k{n}" for n in range(len(lookup.columns)))
        rows = ", ".join(
            "(" + ", ".join(param(value) for value in key) + ")" for key in lookup.keys)
        return f"WITH k({names}) AS (VALUES {rows}) ", "k"

    def key_set_params(self, lookup: Lookup) -> list[Any]:
        return [value for key in lookup.keys for value in key]

    def key_set_shape(self, lookup: Lookup) -> int:
        return len(lookup.keys)

    def condition_shape(self, value: Any) -> Hashable:
        if isinstance(value, In):
            return ("in", len(value.values))
        if isinstance(value, JsonContains):
            return ("json", tuple(_json_kind(v) for v in value.value.values()))
        return "equal"

    @staticmethod
    def _key_equals(column: str, key: str, wanted: Any, param: Param) -> str:
        # The key is compared as a value, never spliced into a JSON path: in a path,
        # a key holding `"."` would name a member of a nested object.
        member = f"j.key = {param(key)}"
        kinds = _json_kind(wanted)
        if kinds == "null":
            test = "j.type = 'null'"
        elif kinds in ("true", "false"):
            test = f"j.type = '{kinds}'"
        elif kinds in ("text", "integer"):
            test = f"j.type = '{kinds}' AND j.value = {param(wanted)}"
        elif kinds == "real":
            test = f"j.type IN ('integer', 'real') AND j.value = {param(wanted)}"
        else:
            test = f"j.type IN ('array', 'object') AND j.value = json({param(_json(wanted))})"
        return f"EXISTS (SELECT 1 FROM json_each({column}) AS j WHERE {member} AND {test})"


def query_sql(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
              param: Param, nullable: Collection[str] = ()) -> str:
    """The SELECT that answers ``query`` (``tables`` maps table names to their qualified
    names; the view is ``v``, and ``with_blob`` joins the tenant's blob as ``b``;
    ``nullable`` names the table's columns that may hold NULL)."""
    def column(name: str) -> str:
        return "v." + quote(name)

    columns = ", ".join(map(column, query.columns)) if query.columns else "v.*"
    prefix = keys = ""
    if query.lookup is not None:  # the key set's placeholders come first in the text
        prefix, keys = dialect.key_set(query.lookup, param)
    conditions = []
    for name, value in query.where.items():
        if isinstance(value, In):
            conditions.append(dialect.member(column(name), value, param))
        elif isinstance(value, JsonContains):
            conditions.append(dialect.contains(column(name), value, param))
        else:
            conditions.append(f"{column(name)} = {param(value)}")
    order = ", ".join(map(column, query.order_by))
    if query.after is not None and query.order_by:
        keyset = ", ".join(param(value) for value in query.after)
        conditions.append(f"({order}) {'<' if query.descending else '>'} ({keyset})")
    if query.lookup is not None:
        conditions += [f"{column(name)} = k.k{n}" for n, name in enumerate(query.lookup.columns)]
    sql = f"{prefix}SELECT {columns}"
    source = f"{tables[query.table]} AS v"
    if query.lookup is not None and dialect.lateral:
        # Each key seeks the table by itself: the subquery, never flattened (OFFSET 0),
        # runs once per key with every condition as an index condition.
        source = (f"{keys} CROSS JOIN LATERAL (SELECT * FROM {source} WHERE "
                  f"{' AND '.join(conditions)} OFFSET 0) AS v")
        conditions = []
    elif query.lookup is not None:
        source = f"{keys} CROSS JOIN {source}"  # SQLite runs a CROSS JOIN's left side first
    if query.with_blob is not None:
        sql += ", b.data AS blob"
        source += (f" LEFT JOIN {tables['blobs']} AS b ON b.tenant_id = v.tenant_id "
                   f"AND b.digest = {column(query.with_blob)}")
    sql += f" FROM {source}"
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    if query.order_by:
        sql += " ORDER BY " + ", ".join(
            dialect.order_term(column(n), descending=query.descending, nullable=n in nullable)
            for n in query.order_by)
    if query.limit is not None:
        sql += f" LIMIT {param(query.limit)}"
    return sql


def query_params(query: ViewQuery, dialect: SqlDialect) -> list[Any]:
    """The values `query_sql` places, in its order."""
    params: list[Any] = []
    if query.lookup is not None:
        params += dialect.key_set_params(query.lookup)
    for value in query.where.values():
        if isinstance(value, In):
            params += dialect.member_params(value)
        elif isinstance(value, JsonContains):
            params += dialect.contains_params(value)
        else:
            params.append(value)
    if query.after is not None and query.order_by:
        params += query.after
    if query.limit is not None:
        params.append(query.limit)
    return params


def query_shape(query: ViewQuery, dialect: SqlDialect) -> Hashable:
    """What `query_sql`'s text depends on: backends cache the text by it."""
    return (
        query.table,
        tuple((name, dialect.condition_shape(value)) for name, value in query.where.items()),
        query.order_by, query.descending, query.after is not None, query.limit is not None,
        query.columns, query.with_blob,
        None if query.lookup is None
        else (query.lookup.columns, dialect.key_set_shape(query.lookup)),
    )


def related_sql(query: ViewQuery, tables: Mapping[str, str], dialect: SqlDialect,
                param: Param, nullable: Collection[str] = ()) -> str:
    """The SELECT that answers ``query`` with its `Related` rows in one statement
    (PostgreSQL): ``query``'s own rows (`query_sql`, so its parameters are
    `query_params`'s) as ``v``, and for each related table, in a ``LATERAL`` subquery
    per row, its rows as one array per column, named ``"<n>.<column>"``
    (`unpack_related` makes them lists of dicts). A related row of ``pairs`` is sought
    by each (key, value) of the row's JSON object, one primary-key seek each (``OFFSET
    0`` keeps the subquery from becoming a join the planner could hash); one of ``on``
    alone by the key's prefix. Every related row is of the row's own tenant. A small
    limit is written into the text (`inline_limit`): the statement's parameters are
    `related_params`'s."""
    def column(name: str) -> str:
        return "v." + quote(name)

    inlined = inline_limit(query)
    inner = query_sql(dataclasses.replace(query, related=(), with_blob=None, columns=None,
                                          limit=None if inlined else query.limit),
                      tables, dialect, param, nullable)
    if inlined:
        inner += f" LIMIT {int(query.limit or 0)}"
    sql = "SELECT " + (", ".join(map(column, query.columns)) if query.columns else "v.*")
    source = f"({inner}) AS v"
    if query.with_blob is not None:
        sql += ", b.data AS blob"
        source += (f" LEFT JOIN {tables['blobs']} AS b ON b.tenant_id = v.tenant_id "
                   f"AND b.digest = {column(query.with_blob)}")
    for n, related in enumerate(query.related):
        x = f"x{n}"
        names = [*related.columns, *(["blob"] if related.with_blob is not None else [])]
        aggregates = [f"array_agg({x}.{quote(name)}) AS {quote(f'{n}.{name}')}"
                      for name in related.columns]
        conditions = [f"{x}.tenant_id = v.tenant_id",
                      *(f"{x}.{quote(name)} = {column(name)}" for name in related.on)]
        if related.pairs is not None and related.pairs_from is not None:
            conditions += [f"{x}.{quote(related.pairs[0])} = j.k",
                           f"{x}.{quote(related.pairs[1])} = j.val"]
            rows = (f"jsonb_each_text({column(related.pairs_from)}::jsonb) AS j(k, val) "
                    f"CROSS JOIN LATERAL (SELECT * FROM {tables[related.table]} AS {x} "
                    f"WHERE {' AND '.join(conditions)} OFFSET 0) AS {x}")
            where = ""
        else:
            rows = f"{tables[related.table]} AS {x}"
            where = " WHERE " + " AND ".join(conditions)
        if related.with_blob is not None:
            aggregates.append(f"array_agg(b{n}.data) AS {quote(f'{n}.blob')}")
            rows += (f" LEFT JOIN {tables['blobs']} AS b{n} ON b{n}.tenant_id = {x}.tenant_id "
                     f"AND b{n}.digest = {x}.{quote(related.with_blob)}")
        source += (f" CROSS JOIN LATERAL (SELECT {', '.join(aggregates)} FROM {rows}{where}) "
                   f"AS r{n}")
        sql += ", " + ", ".join(f"r{n}.{quote(f'{n}.{name}')}" for name in names)
    sql += f" FROM {source}"
    if query.order_by:
        sql += " ORDER BY " + ", ".join(
            dialect.order_term(column(n), descending=query.descending, nullable=n in nullable)
            for n in query.order_by)
    return sql


INLINE_LIMIT = 100
"""The largest limit `related_sql` writes into its text rather than sends."""


def inline_limit(query: ViewQuery) -> bool:
    """Whether `related_sql` writes ``query``'s limit into its text: PostgreSQL plans a
    statement once for any parameters (a generic plan) only when that plan costs no more
    than planning each call anew, and a ``LIMIT $n`` it cannot size makes the generic
    plan of a read with related rows look dearer than any custom one, so each call was
    planned again (0.5-1 ms of planning for 0.2 ms of execution). Up to `INLINE_LIMIT`
    (one text per limit; `related_shape` tells them apart), and not for a keyset page
    (``after``): the generic plan of ``checkpoint_id < $n … LIMIT 10``, unable to size
    the keyset's range, walked the thread's index across every namespace and filtered
    (the plan test caught it), where planning each call seeks the primary key."""
    return query.limit is not None and query.limit <= INLINE_LIMIT and query.after is None


def related_shape(query: ViewQuery, dialect: SqlDialect) -> Hashable:
    """What `related_sql`'s text depends on: backends cache the text by it."""
    return (query_shape(query, dialect), query.related,
            query.limit if inline_limit(query) else None)


def related_params(query: ViewQuery, dialect: SqlDialect) -> list[Any]:
    """The values `related_sql` places, in its order."""
    params = query_params(query, dialect)
    if inline_limit(query):
        params.pop()  # the limit, always last
    return params


def unpack_related(query: ViewQuery, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` of `related_sql`, each related table's arrays made a list of dicts under
    its `Related` ``name`` (in place)."""
    for n, related in enumerate(query.related):
        names = [*related.columns, *(["blob"] if related.with_blob is not None else [])]
        prefixed = [f"{n}.{name}" for name in names]
        for row in rows:
            arrays = [row.pop(name) for name in prefixed]
            row[related.name] = [] if arrays[0] is None else [
                dict(zip(names, values, strict=True)) for values in zip(*arrays, strict=True)]
    return rows


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _pg_type(value: Any) -> str:
    """The PostgreSQL array element type a lookup's key column is sent as."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, bytes):
        return "bytea"
    return "text"


def _json_kind(value: Any) -> str:
    """JSON1's ``json_type`` name for a wanted value (``object``/``array`` for the rest)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    return "object"


class Numbered:
    """A `Param` that numbers PostgreSQL placeholders ``$1``, ``$2`` … and keeps the values."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"


class Positional:
    """A `Param` for SQLite's ``?`` placeholders that keeps the values in order."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return "?"


__all__ = [
    "EVENT_COLUMNS", "Numbered", "Positional", "PostgresDialect", "SequentialAppend",
    "SqlDialect", "Statement",
    "SqliteDialect", "blob_add", "blob_purge", "blob_release", "change_params", "change_sql",
    "event_insert", "on_conflict", "query_params", "query_shape", "query_sql", "quote",
    "inline_limit", "related_params", "related_shape", "related_sql", "unpack_related",
]
