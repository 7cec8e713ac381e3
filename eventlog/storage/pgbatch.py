"""A batched append on PostgreSQL as ONE statement: column arrays, `unnest`, one round trip.

Every event of the batch goes in as one ``INSERT … SELECT FROM unnest(…)`` (one array
parameter per column, in batch order, so positions increase in that order); the blob
references as one upsert over their arrays (references to one digest summed first); and
the view changes, grouped by shape (kind of change, table, columns), as one data-modifying
CTE per group over that group's arrays. A change that needs its event's position joins
the events CTE on (tenant, stream, version). So the SQL text depends only on which change
shapes occur, not on how many events there are, and asyncpg keeps one prepared statement
for it however large the batch.

One statement cannot change a row twice, and its CTEs do not see each other's writes, so
the changes are first coalesced as for a single append (a later upsert of a row with the
same columns replaces an earlier one; a second insert-if-absent of a row is dropped); a
batch whose changes still collide (an update after an upsert of the same row, a delete
beside other changes of its table) or that releases blobs is not expressible here and
takes the ordinary transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from eventlog.storage.base import AppendRequest
from eventlog.storage.sqltext import on_conflict, quote
from projections.changes import AT_POSITION, Change, change_shape, change_values

EVENT_COLUMNS = (
    "tenant_id", "stream_id", "stream_version", "event_id", "type", "data", "recorded_at",
    "prev_hash", "hash", "actor", "signature",
)
_BLOB_COLUMNS = ("tenant_id", "digest", "size", "refs", "data")
_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]

Ref = tuple[int, int]
"""(request index, event index) of the event a change came from."""
Shape = tuple[Any, ...]
Coalesce = Callable[[Sequence[tuple[Ref, Change]]], list[tuple[Ref, Change]] | None]


class BatchStatements:
    """Builds (and caches by shape) the one statement of a batched append."""

    def __init__(self, qualified: dict[str, str], tables: dict[str, sa.Table],
                 view_keys: dict[str, list[str]]) -> None:
        self.qualified = qualified
        self.tables = tables
        self.view_keys = view_keys
        self._sql: dict[tuple[Any, ...], str] = {}

    def build(
        self, requests: Sequence[AppendRequest], coalesce: Coalesce
    ) -> tuple[str, list[Any]] | None:
        """The batch's SQL and parameters, or None when one statement cannot express it."""
        if any(request.blob_releases or request.required for request in requests):
            return None  # the sequential statements check a requirement (`SequentialAppend`)
        changes = coalesce([
            ((number, index), change)
            for number, request in enumerate(requests) for index, change in request.changes
        ])
        if changes is None:
            return None
        groups: dict[Shape, list[tuple[Ref, Change]]] = {}
        for ref, change in changes:
            groups.setdefault(change_shape(change), []).append((ref, change))
        blobs = _blob_rows(requests)
        counted = [row for row in blobs if row[3] != 0]
        kept = [row for row in blobs if row[3] == 0]
        key = (bool(counted), bool(kept), tuple(groups))
        sql = self._sql.get(key)
        if sql is None:
            sql = self._sql[key] = self._statement(bool(counted), bool(kept), list(groups))
        params: list[Any] = _event_arrays(requests)
        for rows in (counted, kept):
            if rows:
                params += [list(column) for column in zip(*rows, strict=True)]
        for shape, members in groups.items():
            params += _change_arrays(requests, shape, members)
        return sql, params

    def _statement(self, counted: bool, kept: bool, shapes: list[Shape]) -> str:
        numbers = iter(range(1, 100_000))
        events = self.tables["events"]
        arrays = ", ".join(f"${next(numbers)}::{_array_type(events, c)}" for c in EVENT_COLUMNS)
        names = ", ".join(EVENT_COLUMNS)
        ctes = [
            f"e AS (INSERT INTO {self.qualified['events']} ({names}) "
            f"SELECT {names} FROM unnest({arrays}) WITH ORDINALITY AS u({names}, ord) "
            "ORDER BY ord RETURNING position, tenant_id, stream_id, stream_version)"
        ]
        # Counted blobs add to the stored count; those the digest tells (count 0) are
        # stored if absent and otherwise left alone, never locked (listed second, so run
        # first: `PostgresBackend._place_statement`).
        for name, wanted, conflict in (
                ("b", counted, "DO UPDATE SET refs = t.refs + EXCLUDED.refs"),
                ("k", kept, "DO NOTHING")):
            if not wanted:
                continue
            table = self.tables["blobs"]
            arrays = ", ".join(f"${next(numbers)}::{_array_type(table, c)}"
                               for c in _BLOB_COLUMNS)
            ctes.append(
                f"{name} AS (INSERT INTO {self.qualified['blobs']} AS t "
                f"({', '.join(_BLOB_COLUMNS)}) SELECT * FROM unnest({arrays}) "
                f"ON CONFLICT (tenant_id, digest) {conflict})"
            )
        for number, shape in enumerate(shapes):
            ctes.append(f"c{number} AS ({self._change_sql(shape, numbers)})")
        return (f"WITH {', '.join(ctes)} "
                "SELECT position, tenant_id, stream_id, stream_version FROM e")

    def _change_sql(self, shape: Shape, numbers: Any) -> str:
        kind, table_name, columns, key = shape
        table = self.tables[table_name]
        target = self.qualified[table_name]
        arrays = [f"${next(numbers)}::{_array_type(table, name)}"
                  for name, at_position in columns if not at_position]
        aliases = [f"v{i}" for i, (_, at_position) in enumerate(columns) if not at_position]
        joins = any(at_position for _, at_position in columns)
        if joins:
            arrays += [f"${next(numbers)}::text[]", f"${next(numbers)}::text[]",
                       f"${next(numbers)}::bigint[]"]
            aliases += ["ev_tenant", "ev_stream", "ev_version"]
        source = f"unnest({', '.join(arrays)}) AS u({', '.join(aliases)})"
        if joins:
            source += (" JOIN e ON e.tenant_id = u.ev_tenant AND e.stream_id = u.ev_stream "
                       "AND e.stream_version = u.ev_version")
        values = ["e.position" if at_position else f"u.v{i}"
                  for i, (_, at_position) in enumerate(columns)]
        names = [name for name, _ in columns]
        if kind in ("Upsert", "Insert", "InsertIfAbsent"):
            keys = self.view_keys[table_name]
            sql = (f"INSERT INTO {target} ({', '.join(map(quote, names))}) "
                   f"SELECT {', '.join(values)} FROM {source}")
            return sql + on_conflict(names, keys, keep_existing=kind != "Upsert")
        pairs = list(zip(names, values, strict=True))
        if kind == "Update":
            sets = pairs[: len(pairs) - len(key)]
            where = pairs[len(pairs) - len(key):]
            return (f"UPDATE {target} AS t SET "
                    + ", ".join(f"{quote(n)} = {v}" for n, v in sets)
                    + f" FROM {source} WHERE "
                    + " AND ".join(f"t.{quote(n)} = {v}" for n, v in where))
        return (f"DELETE FROM {target} AS t USING {source} WHERE "
                + " AND ".join(f"t.{quote(n)} = {v}" for n, v in pairs))


def _event_arrays(requests: Sequence[AppendRequest]) -> list[list[Any]]:
    columns: list[list[Any]] = [[] for _ in EVENT_COLUMNS]
    for request in requests:
        for pending in request.events:
            for column, value in zip(columns, (
                request.tenant_id, request.stream_id, pending.version, pending.event_id,
                pending.type, pending.data, pending.recorded_at, pending.prev_hash,
                pending.hash, pending.actor, pending.signature,
            ), strict=True):
                column.append(value)
    return columns


def _blob_rows(requests: Sequence[AppendRequest]) -> list[tuple[Any, ...]]:
    """One row per (tenant, digest), its reference counts summed (a statement cannot
    upsert one row twice), sorted."""
    rows: dict[tuple[str, bytes], tuple[bytes, int]] = {}
    for request in requests:
        for digest, (payload, count) in request.blob_adds.items():
            key = (request.tenant_id, digest)
            rows[key] = (payload, rows.get(key, (payload, 0))[1] + count)
    # In (tenant, digest) order, as every other append touches blob rows: two appends
    # locking shared rows in opposite orders deadlock (a large thread copy against a
    # delete of its source did, issue 21 item 5).
    return [(tenant, digest, len(payload), count, payload)
            for (tenant, digest), (payload, count) in sorted(rows.items())]


def _change_arrays(requests: Sequence[AppendRequest], shape: Shape,
                   members: list[tuple[Ref, Change]]) -> list[list[Any]]:
    columns = shape[2]
    arrays: list[list[Any]] = [[] for _, at_position in columns if not at_position]
    joins = any(at_position for _, at_position in columns)
    refs: list[list[Any]] = [[], [], []] if joins else []
    for (number, index), change in members:
        values = [value for _, value in change_values(change) if value is not AT_POSITION]
        for array, value in zip(arrays, values, strict=True):
            array.append(value)
        if joins:
            request = requests[number]
            refs[0].append(request.tenant_id)
            refs[1].append(request.stream_id)
            refs[2].append(request.events[index].version)
    return arrays + refs


def _array_type(table: sa.Table, column: str) -> str:
    kind = table.c[column].type
    if isinstance(kind, sa.String) and kind.collation is not None:
        # A cast names the type alone; the column's collation applies where it is stored.
        kind = kind.copy()
        kind.collation = None
    return f"{kind.compile(dialect=_DIALECT)}[]"
