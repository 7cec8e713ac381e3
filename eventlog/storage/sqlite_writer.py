"""The SQLite append path: one thread, one ``sqlite3`` connection, one hop per append.

Appending through SQLAlchemy over aiosqlite cost ~7 ms of CPU per checkpoint: every
statement was built and compiled anew, and aiosqlite makes several thread hops per
statement. Here the whole append (BEGIN IMMEDIATE, the event rows, blob references, view
changes, COMMIT) runs as one function on a dedicated writer thread, with SQL text cached
per change shape. Values are encoded by the same SQLAlchemy column types the reads decode
with, so rows are byte-for-byte what the SQLAlchemy path wrote.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import sqlalchemy as sa

from eventlog.storage.base import AppendRequest
from eventlog.storage.sqltext import on_conflict, quote
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

_EVENT_COLUMNS = (
    "tenant_id", "stream_id", "stream_version", "event_id", "type", "data", "recorded_at",
    "prev_hash", "hash",
)
Encoder = Callable[[Any], Any]


class SqliteWriter:
    """Runs appends on one thread with its own connection to the database file."""

    def __init__(self, path: str, tables: dict[str, sa.Table], pragmas: list[str],
                 dialect: sa.Dialect) -> None:
        self._path = path
        self._dialect = dialect
        self._tables = tables
        self._pragmas = pragmas
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eventlog-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        self._sql: dict[tuple[Any, ...], str] = {}
        self._encoders: dict[tuple[str, str], Encoder | None] = {}
        self._events_sql = (
            f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in _EVENT_COLUMNS)})"
        )

    async def append(self, request: AppendRequest) -> list[int]:
        """Commit ``request`` in one transaction; the positions assigned, in event order."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._append, request)

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Commit every request in one transaction; each one's positions, in order."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._append_batch, requests)

    async def close(self) -> None:
        """Close the connection (on its own thread) and stop the thread; again, nothing."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._close)
        self._thread.shutdown(wait=True)

    # -- on the writer thread ------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = sqlite3.connect(self._path, isolation_level=None,
                                         check_same_thread=False)
            for pragma in self._pragmas:
                connection.execute(pragma)
            self._connection = connection
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _append(self, request: AppendRequest) -> list[int]:
        return self._append_batch([request])[0]

    def _append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        connection = self._connect()
        connection.execute("BEGIN IMMEDIATE")
        try:
            positions = [self._write(connection, request) for request in requests]
            connection.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (disk full, I/O error) can leave the transaction open; the
            # next append must not run inside it.
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return positions

    def _write(self, connection: sqlite3.Connection, request: AppendRequest) -> list[int]:
        positions: list[int] = []
        for pending in request.events:
            values = (
                request.tenant_id, request.stream_id, pending.version, pending.event_id,
                pending.type, pending.data, pending.recorded_at, pending.prev_hash, pending.hash,
            )
            cursor = connection.execute(self._events_sql, self._encode("events", zip(
                _EVENT_COLUMNS, values, strict=True)))
            assert cursor.lastrowid is not None
            positions.append(cursor.lastrowid)
        for digest, (payload, count) in request.blob_adds.items():
            connection.execute(
                "INSERT INTO blobs (tenant_id, digest, size, refs, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant_id, digest) DO UPDATE SET refs = refs + excluded.refs",
                (request.tenant_id, digest, len(payload), count, payload),
            )
        for digest, count in request.blob_releases.items():
            where = (request.tenant_id, digest)
            connection.execute(
                "UPDATE blobs SET refs = refs - ? WHERE tenant_id = ? AND digest = ?",
                (count, *where),
            )
            connection.execute(
                "DELETE FROM blobs WHERE tenant_id = ? AND digest = ? AND refs <= 0", where)
        for index, change in request.changes:
            sql, pairs = self._change(change, positions[index])
            connection.execute(sql, self._encode(change.table, pairs))
        return positions

    def _change(self, change: Change, position: int) -> tuple[str, list[tuple[str, Any]]]:
        """The change's SQL (cached by shape) and its (column, value) pairs in order."""
        pairs = change_values(change)
        shape = change_shape(change)
        sql = self._sql.get(shape)
        if sql is None:
            sql = self._sql[shape] = self._change_sql(change, [name for name, _ in pairs])
        return sql, [(name, position if value is AT_POSITION else value)
                     for name, value in pairs]

    def _change_sql(self, change: Change, names: list[str]) -> str:
        table = quote(change.table)
        keys = [column.name for column in self._tables[change.table].primary_key.columns]
        if isinstance(change, Upsert | InsertIfAbsent):
            sql = (f"INSERT INTO {table} ({', '.join(map(quote, names))}) "
                   f"VALUES ({', '.join('?' for _ in names)})")
            return sql + on_conflict(names, keys, keep_existing=isinstance(change, InsertIfAbsent))
        if isinstance(change, Update):
            sets = ", ".join(f"{quote(n)} = ?" for n in change.values)
            where = " AND ".join(f"{quote(n)} = ?" for n in change.key)
            return f"UPDATE {table} SET {sets} WHERE {where}"
        assert isinstance(change, Delete)
        where = " AND ".join(f"{quote(n)} = ?" for n in names)
        return f"DELETE FROM {table} WHERE {where}"

    def _encode(self, table: str, pairs: Any) -> list[Any]:
        """Values as SQLAlchemy's column types would bind them on SQLite."""
        values = []
        for name, value in pairs:
            key = (table, name)
            if key not in self._encoders:
                column_type = self._tables[table].c[name].type.dialect_impl(self._dialect)
                self._encoders[key] = column_type.bind_processor(self._dialect)
            encoder = self._encoders[key]
            values.append(value if encoder is None or value is None else encoder(value))
        return values
