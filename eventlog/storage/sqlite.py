"""The embedded default (``sqlite:///path.db``): a SQLite file in WAL mode.

Writes take the database lock up front (``BEGIN IMMEDIATE``), so a write transaction
never fails half-way on a read-to-write lock upgrade, and there is one writer at a time:
positions become visible in the order they were assigned, which makes position order
gap-safe. Readers never block writers in WAL mode.

Our own file is written on one writer thread over ``sqlite3`` (`SqliteWriter`) and read
on a few reader threads over ``sqlite3`` (`SqliteReader`): each call, whatever its
statements, is one job on one connection, so one thread hop. An application's engine, or
an in-memory database, appends and reads through SQLAlchemy's connection (over aiosqlite),
as does a task inside `hold_stream`. Both append paths run the same statements
(`SqlBackend.sequential`, rows into one table merged by `run_statements`), and every read
decodes values with the SQLAlchemy column types of the schema.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from eventlog import cursors
from eventlog.errors import (
    CommitOutcomeUnknown,
    EventLogError,
    InvalidInput,
    SchemaError,
    StorageError,
)
from eventlog.records import StoredEvent
from eventlog.storage.base import AppendRequest, StreamVersionTaken
from eventlog.storage.contracts.events import NewestEvent
from eventlog.storage.defaults import OneWriter
from eventlog.storage.filewatch import FileListener
from eventlog.storage.sql import (
    CHECKED_COLUMNS,
    EVENT_READ_COLUMNS,
    SCAN_PAGE,
    SqlBackend,
    normalise_row,
    prefix_end,
    stored_event,
)
from eventlog.storage.sqlconsumers import SqliteConsumers
from eventlog.storage.sqlite_writer import SqliteReader, SqliteWriter
from eventlog.storage.sqlkeys import SqliteKeys
from eventlog.storage.sqltext import Positional, SqliteDialect, Statement, quote
from eventlog.storage.sqltree import SqliteTree
from eventlog.telemetry import Database
from projections.query import ViewQuery, read_related_now

_PAST_EVERY_POSITION = 2**63 - 1
"""Above every position (SQLite's largest integer)."""
_WRITE = "eventlog_write"
_SET_UP = "eventlog_set_up"
BUSY_TIMEOUT_MS = 60_000
CONNECTION_PRAGMAS = [
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
]
"""Run on every connection: wait for other writers, write-ahead log, fsync each commit
(the last one names the ``synchronous`` option's default)."""
SYNCHRONOUS_LEVELS = ("FULL", "NORMAL", "EXTRA")
"""``synchronous`` levels a log may choose. FULL (the default, and SQLite's) fsyncs the
write-ahead log at every commit: an acknowledged append survives a power cut. NORMAL
fsyncs it only at checkpoints: a crash of the process loses nothing, a power cut may lose
the last commits (never the file's integrity). EXTRA also fsyncs the directory. OFF is
not offered: it can corrupt the file on a power cut."""
READER_PRAGMAS = [f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}", "PRAGMA query_only = ON"]
"""Run on each reader connection (`SqliteReader`): it never writes."""
BLOB_CHUNK = 500
"""Digests per statement of `SqliteBackend.get_blobs` (SQLite bounds a statement's values)."""
_DIALECT = sqlite_dialect.dialect()
R = TypeVar("R")


class SqliteBackend(OneWriter, SqlBackend[AsyncConnection], SqliteTree, SqliteKeys,
                    SqliteConsumers):
    """A SQLite file shared safely by any number of processes on one machine."""

    name = "sqlite"
    dialect_name = "sqlite"

    @property
    def database(self) -> Database:
        """The database file, as configured."""
        return Database(system="sqlite", namespace=self.path or None)

    def listener(self, wake: Callable[[], None]) -> FileListener | None:
        """A watch on the database file and its WAL that calls ``wake`` when another
        process (or connection) writes them (`eventlog.storage.filewatch`); None for an
        in-memory database, which no other connection sees."""
        if not self.path or self.path == ":memory:" or self.path.startswith("file:"):
            return None
        return FileListener(self.path, wake)
    sql_dialect = SqliteDialect()

    def __init__(self, path: str | None = None, *, engine: AsyncEngine | None = None,
                 synchronous: str = "FULL") -> None:
        """``synchronous``: one of `SYNCHRONOUS_LEVELS` (FULL unless told: every
        acknowledged append is on disk)."""
        if not isinstance(synchronous, str) or synchronous.upper() not in SYNCHRONOUS_LEVELS:
            raise InvalidInput("synchronous", f"must be one of {', '.join(SYNCHRONOUS_LEVELS)}"
                                              f", not {synchronous!r}"[:200])
        self.pragmas = [*CONNECTION_PRAGMAS[:-1], f"PRAGMA synchronous = {synchronous.upper()}"]
        """Run on each of this log's connections."""
        if engine is None:
            assert path is not None
            self.path: str | None = path
            engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
            self.owned = True
        else:
            self.path, self.owned = engine.url.database, False
        self.engine = engine
        _install_connection_setup(engine, self.pragmas)
        super().__init__(schema=None)
        self._decoders = view_decoders(self.views)
        # Our own file: appends take the one-hop writer thread. An application's engine (or
        # an in-memory database, which another connection would not see) keeps SQLAlchemy.
        self._writer: SqliteWriter | None = None
        self._reader: SqliteReader | None = None
        if self.owned and self.path and self.path != ":memory:":
            self._writer = SqliteWriter(self.path, self.pragmas,
                                        lambda c, r: run_statements(
                                            self.sequential.statements(r), c.execute))
            self._reader = SqliteReader(self.path, READER_PRAGMAS)
        events = self.qualified["events"]
        columns = ", ".join(map(quote, EVENT_READ_COLUMNS))
        self._event_sql = {
            "stream": f"SELECT {columns} FROM {events} WHERE tenant_id = ? AND stream_id = ? "
                      "AND stream_version >= ? ORDER BY stream_version LIMIT ?",
            "all": f"SELECT {columns} FROM {events} WHERE position > ? "
                   "ORDER BY position LIMIT ?",
            "tenant": f"SELECT {columns} FROM {events} WHERE position > ? AND tenant_id = ? "
                      "ORDER BY position LIMIT ?",
            "id": f"SELECT {columns} FROM {events} WHERE tenant_id = ? AND event_id = ?",
            "head": f"SELECT stream_version, hash FROM {events} WHERE tenant_id = ? "
                    "AND stream_id = ? ORDER BY stream_version DESC LIMIT 1",
            "newest": f"SELECT stream_id, stream_version, position, actor FROM {events} "
                      "WHERE tenant_id = ? AND position < ? ORDER BY position DESC LIMIT ?",
        }
        """The hot reads of the log as plain SQL for the reader: the same rows (the driver's
        values, as `_select_events` reads them) without SQLAlchemy compiling each call."""

    def new_param(self) -> Positional:
        return Positional()

    # -- connections ---------------------------------------------------------------------

    async def open(self, *, upgrade: bool) -> str:
        try:
            if self.path and self.path != ":memory:":
                _prepare_path(self.path, create=upgrade)
            async with self.write_transaction() as connection:
                return await self.migrate(connection, upgrade=upgrade)
        except EventLogError:
            raise
        except Exception as error:
            raise self.translate(error, "open") from error

    async def close(self) -> None:
        if self._writer is not None:
            await self._writer.close()
        if self._reader is not None:
            await self._reader.close()
        if self.owned:
            await self.engine.dispose()

    @asynccontextmanager
    async def write_transaction(self) -> AsyncIterator[AsyncConnection]:
        """A connection inside a write transaction (``BEGIN IMMEDIATE``)."""
        async with self.engine.connect() as connection:
            connection = await connection.execution_options(**{_WRITE: True})
            async with connection.begin():
                yield connection

    def holding_transaction(
        self, tenant_id: str, stream_id: str
    ) -> AbstractAsyncContextManager[AsyncConnection]:
        # SQLite has one writer: inside BEGIN IMMEDIATE no other append of any stream
        # commits, and the reads made here see everything committed before it.
        return self.write_transaction()

    @asynccontextmanager
    async def read_connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one or more reads, with driver errors translated; inside
        `hold_stream`, the holding transaction's."""
        held = self._held.get()
        if held is not None:
            try:
                yield held
            except Exception as error:
                raise self.translate(error, "read") from error
            return
        try:
            async with self.engine.connect() as connection:
                yield connection
        except Exception as error:
            raise self.translate(error, "read") from error

    # -- the append ----------------------------------------------------------------------

    async def append(self, request: AppendRequest) -> list[int]:
        return (await self.append_batch([request]))[0]

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        def write(sync: sa.Connection) -> list[list[int]]:
            return [run_statements(self.sequential.statements(request),
                                   lambda sql, values: sync.exec_driver_sql(sql, tuple(values)))
                    for request in requests]

        try:
            held = self._held.get()
            if held is not None:  # in the holding transaction (the writer would wait on it)
                return await held.run_sync(write)
            if self._writer is not None:
                return await self._writer.append_batch(requests)
            async with self.write_transaction() as connection:
                return await connection.run_sync(write)
        except Exception as error:
            raise self.translate(error, "append") from error

    async def append_at_head(
        self, tenant_id: str, stream_id: str,
        build: Callable[[tuple[int, bytes] | None], AppendRequest],
    ) -> tuple[AppendRequest, list[int]]:
        # Inside BEGIN IMMEDIATE no other writer can append: the head read there is the
        # one the append chains onto, so this append cannot lose a version race.
        built: list[AppendRequest] = []
        head_sql = (f"SELECT stream_version, hash FROM {self.qualified['events']} "
                    "WHERE tenant_id = ? AND stream_id = ? ORDER BY stream_version DESC LIMIT 1")

        def at_head(execute: Callable[[str, Any], Any]) -> AppendRequest:
            row = execute(head_sql, (tenant_id, stream_id)).fetchone()
            built.append(build(None if row is None else (int(row[0]), bytes(row[1]))))
            return built[0]

        def write(sync: sa.Connection) -> list[int]:
            return run_statements(
                self.sequential.statements(at_head(
                    lambda sql, values: sync.exec_driver_sql(sql, tuple(values)))),
                lambda sql, values: sync.exec_driver_sql(sql, tuple(values)))

        try:
            held = self._held.get()
            if held is not None:
                positions = await held.run_sync(write)
            elif self._writer is not None:
                positions = await self._writer.append_built(lambda c: at_head(c.execute))
            else:
                async with self.write_transaction() as connection:
                    positions = await connection.run_sync(write)
        except Exception as error:
            raise self.translate(error, "append") from error
        return built[0], positions

    # -- reads ---------------------------------------------------------------------------

    def _reading(self) -> SqliteReader | None:
        """The reader, unless the task is inside `hold_stream` (whose connection reads)."""
        return self._reader if self._held.get() is None else None

    async def _read(self, job: Callable[[sqlite3.Connection], R]) -> R:
        assert self._reader is not None
        try:
            return await self._reader.run(job)
        except Exception as error:
            raise self.translate(error, "read") from error

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        # On the reader: the whole query, related tables included, is one job (one hop);
        # a query with related tables reads them in one read transaction (one snapshot).
        if self._reading() is None:
            return await super().query(query)
        if query.table not in self.views:
            raise KeyError(query.table)

        def rows(connection: sqlite3.Connection, query: ViewQuery) -> list[dict[str, Any]]:
            if query.lookup is not None and not query.lookup.keys:
                return []  # no key, no row (and no key set to type)
            sql, values = self.view_sql(query)
            cursor = connection.execute(sql, encode_values(values))
            names = [column[0] for column in cursor.description]
            decoders = self._decoders[query.table]
            return [decode_view_row(names, row, decoders) for row in cursor.fetchall()]

        def job(connection: sqlite3.Connection) -> list[dict[str, Any]]:
            if not query.related:
                return rows(connection, query)
            connection.execute("BEGIN")
            found = read_related_now(query, lambda part: rows(connection, part))
            connection.execute("COMMIT")
            return found

        return await self._read(job)

    async def fetch_view_rows(
        self, table: str, sql: str, params: list[Any]
    ) -> list[dict[str, Any]]:
        decoders = self._decoders.get(table, _AS_STORED)  # a history: no view's columns
        async with self.read_connection() as connection:
            result = await connection.exec_driver_sql(sql, tuple(map(encode_value, params)))
            names = list(result.keys())
            rows = result.all()
        return [decode_view_row(names, row, decoders) for row in rows]

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        if self._reading() is not None:
            sql = self._event_sql["head"]
            # fetchall: the statement runs to its end, so no read transaction stays open
            rows = await self._read(lambda c: c.execute(sql, (tenant_id, stream_id)).fetchall())
            return (int(rows[0][0]), bytes(rows[0][1])) if rows else None
        events = self.events
        async with self.read_connection() as connection:
            row = (
                await connection.execute(
                    sa.select(events.c.stream_version, events.c.hash)
                    .where(events.c.tenant_id == tenant_id, events.c.stream_id == stream_id)
                    .order_by(events.c.stream_version.desc())
                    .limit(1)
                )
            ).first()
        return None if row is None else (int(row[0]), bytes(row[1]))

    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int, limit: int
    ) -> list[StoredEvent]:
        if self._reading() is not None:
            return await self._read_events(
                "stream", (tenant_id, stream_id, from_version, limit))
        events = self.events
        statement = (
            self._select_events()
            .where(
                events.c.tenant_id == tenant_id,
                events.c.stream_id == stream_id,
                events.c.stream_version >= from_version,
            )
            .order_by(events.c.stream_version)
            .limit(limit)
        )
        return await self._fetch_events(statement)

    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        # One writer at a time: positions become visible in commit order.
        if self._reading() is not None:
            start = cursors.decode_position(after)
            rows = await self._read_events(
                "all", (start, limit)) if tenant_id is None else await self._read_events(
                "tenant", (start, tenant_id, limit))
            return rows, cursors.encode_position(rows[-1].position) if rows else after
        events = self.events
        statement = self._select_events().where(events.c.position > cursors.decode_position(after))
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        rows = await self._fetch_events(statement.order_by(events.c.position).limit(limit))
        return rows, cursors.encode_position(rows[-1].position) if rows else after

    async def scan_streams(self, tenant_id: str | None, prefix: str = ""
                           ) -> AsyncIterator[StoredEvent]:
        events = self.events
        order = (events.c.tenant_id, events.c.stream_id, events.c.stream_version)
        last: tuple[str, str, int] | None = None
        while True:
            statement = self._select_events().order_by(*order).limit(SCAN_PAGE)
            if tenant_id is not None:
                statement = statement.where(events.c.tenant_id == tenant_id)
            if prefix:
                statement = statement.where(events.c.stream_id >= prefix,
                                            events.c.stream_id < prefix_end(prefix))
            if last is not None:
                statement = statement.where(sa.tuple_(*order) > sa.tuple_(*last))
            page = await self._fetch_events(statement)
            for stored in page:
                yield stored
            if len(page) < SCAN_PAGE:
                return
            last = (page[-1].tenant_id, page[-1].stream_id, page[-1].version)

    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        events = self.events
        statement = sa.select(events.c.tenant_id, sa.func.count()).group_by(events.c.tenant_id)
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        async with self.read_connection() as connection:
            rows = await connection.execute(statement)
            return {str(tenant): int(count) for tenant, count in rows}

    async def signing_starts(self, tenant_id: str | None) -> dict[str, int]:
        events = self.events
        statement = (sa.select(events.c.tenant_id, sa.func.min(events.c.position))
                     .where(events.c.signature.is_not(None)).group_by(events.c.tenant_id))
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        async with self.read_connection() as connection:
            rows = await connection.execute(statement)
            return {str(tenant): int(start) for tenant, start in rows}

    async def events_newest_first(self, tenant_id: str, before: int | None, limit: int
                                  ) -> list[NewestEvent]:
        # ``before`` past any position when None: one statement, by the (tenant, position)
        # index read backwards (the plain SQL of the reader, as the hot event reads).
        sql = self._event_sql["newest"]
        params = (tenant_id, _PAST_EVERY_POSITION if before is None else before, limit)
        if self._reading() is not None:
            rows = await self._read(lambda c: c.execute(sql, params).fetchall())
        else:
            async with self.read_connection() as connection:
                rows = list(await connection.exec_driver_sql(sql, params))
        return [(str(stream), int(version), int(position), actor)
                for stream, version, position, actor in rows]

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        if self._reading() is not None:
            found = await self._read_events("id", (tenant_id, encode_value(event_id)))
            return found[0] if found else None
        events = self.events
        rows = await self._fetch_events(
            self._select_events().where(events.c.tenant_id == tenant_id,
                                        events.c.event_id == event_id)
        )
        return rows[0] if rows else None

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        found = await self.get_blobs(tenant_id, [digest])
        return found.get(digest)

    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        if self._reading() is not None:
            wanted = list(dict.fromkeys(digests))
            table = self.qualified["blobs"]

            def job(connection: sqlite3.Connection) -> dict[bytes, bytes]:
                found: dict[bytes, bytes] = {}
                for start in range(0, len(wanted), BLOB_CHUNK):
                    chunk = wanted[start:start + BLOB_CHUNK]
                    found.update((bytes(digest), bytes(data)) for digest, data in
                                 connection.execute(
                                     f"SELECT digest, data FROM {table} WHERE tenant_id = ? "
                                     f"AND digest IN ({', '.join('?' * len(chunk))})",
                                     (tenant_id, *chunk)))
                return found

            return await self._read(job) if wanted else {}
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, blobs.c.data).where(
                    blobs.c.tenant_id == tenant_id, blobs.c.digest.in_(list(digests))
                )
            )
            return {bytes(digest): bytes(data) for digest, data in rows}

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, sa.func.length(blobs.c.data)).where(
                    blobs.c.tenant_id == tenant_id, blobs.c.digest.in_(list(digests))
                )
            )
            return {bytes(digest): int(size or 0) for digest, size in rows}

    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, blobs.c.refs).where(blobs.c.tenant_id == tenant_id)
            )
            return {bytes(digest): int(refs) for digest, refs in rows}

    async def blob_refs_page(
        self, tenant_id: str, after: bytes, limit: int
    ) -> list[tuple[bytes, int]]:
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, blobs.c.refs)
                .where(blobs.c.tenant_id == tenant_id, blobs.c.digest > after)
                .order_by(blobs.c.digest).limit(limit)
            )
            return [(bytes(digest), int(refs)) for digest, refs in rows]

    def _select_events(self) -> sa.Select[Any]:
        # The driver's values, not SQLAlchemy's type processing: a row whose column was
        # rewritten with another type or format must become a finding of verify, not an
        # exception that ends the scan (`stored_event` converts and notes the damage).
        events = self.events
        return sa.select(*[
            sa.type_coerce(events.c[name], sa.types.NullType()).label(name)
            if name in CHECKED_COLUMNS else events.c[name]
            for name in EVENT_READ_COLUMNS
        ])

    async def _read_events(self, name: str, values: tuple[Any, ...]) -> list[StoredEvent]:
        sql = self._event_sql[name]
        return await self._read(
            lambda connection: [stored_event(row) for row in connection.execute(sql, values)])

    async def _fetch_events(self, statement: sa.Select[Any]) -> list[StoredEvent]:
        async with self.read_connection() as connection:
            result = await connection.execute(statement)
            return [stored_event(row) for row in result]

    # -- errors --------------------------------------------------------------------------

    def translate(self, error: BaseException, operation: str) -> BaseException:
        if isinstance(error, EventLogError | StreamVersionTaken):
            return error
        original = error.orig if isinstance(error, DBAPIError) else error
        if isinstance(original, sqlite3.IntegrityError) and "events.stream_version" in str(
                original):
            return StreamVersionTaken()
        if isinstance(original, sqlite3.IntegrityError) and "events.event_id" in str(original):
            return CommitOutcomeUnknown("sqlite", operation, "event ids already stored")
        return StorageError("sqlite", operation, f"{type(original).__name__}: {original}")


def run_statements(
    statements: Generator[Statement, Any, list[int]], execute: Callable[[str, Any], Any]
) -> list[int]:
    """Run a sequential append on a synchronous connection (``sqlite3``'s ``execute`` or
    SQLAlchemy's ``exec_driver_sql``); the positions of its events.

    The statements that return nothing (view changes, blob references) are written as few
    statements as their rows allow (`_write_rows`): the rows one statement inserts into
    one table, for a put two channel values, two value records and three blobs, become
    one multi-row INSERT each. Nothing reads between them, so the outcome is the same."""
    result: Any = None
    waiting: list[tuple[str, Sequence[Any]]] = []
    try:
        while True:
            sql, values, returns = statements.send(result)
            if returns:
                _write_rows(waiting, execute)
                cursor = execute(sql, encode_values(values))
                result = cursor.fetchone()[0]
            else:
                waiting.append((sql, values))
                result = None
    except StopIteration as done:
        _write_rows(waiting, execute)
        positions: list[int] = done.value
        return positions


MAX_VALUES = 30_000
"""Values one merged INSERT binds at most (SQLite's limit is 32,766 since 3.32)."""


def _write_rows(waiting: list[tuple[str, Sequence[Any]]],
                execute: Callable[[str, Any], Any]) -> None:
    """Run ``waiting`` (and empty it): each table's statements in their order, tables one
    after the other (a statement of a sequential append touches only its own table and
    reads nothing another one writes), and a run of INSERTs of one text into a table as
    one multi-row INSERT. SQLite applies a multi-row upsert row by row, so a later row
    meeting an earlier one's key updates it exactly as a second statement would."""
    if not waiting:
        return
    by_table: dict[str, list[tuple[str, Sequence[Any]]]] = {}
    for sql, values in waiting:
        target = _target(sql)
        if target is None:  # not a statement we know: run them all as they came
            by_table = {"": list(waiting)}
            break
        by_table.setdefault(target, []).append((sql, values))
    waiting.clear()
    for group in by_table.values():
        start = 0
        while start < len(group):
            sql, values = group[start]
            end = start + 1
            if _rows_of(sql) is not None and len(values):
                most = max(1, MAX_VALUES // len(values))
                while end < len(group) and group[end][0] == sql and end - start < most:
                    end += 1
            if end - start == 1:
                execute(sql, encode_values(values))
            else:
                execute(_multi_row(sql, end - start),
                        encode_values([value for _, row in group[start:end] for value in row]))
            start = end


def _target(sql: str) -> str | None:
    """The table a sequential append's statement writes (None: not one we know)."""
    words = sql.split(None, 3)
    if len(words) >= 3 and words[0] == "INSERT" and words[1] == "INTO":
        return words[2]
    if len(words) >= 2 and words[0] == "UPDATE":
        return words[1]
    if len(words) >= 3 and words[0] == "DELETE" and words[1] == "FROM":
        return words[2]
    return None


_ROWS: dict[str, tuple[str, str, int] | None] = {}
_MULTI: dict[tuple[str, int], str] = {}


def _rows_of(sql: str) -> tuple[str, str, int] | None:
    """An INSERT of one row whose placeholders are ``?1`` … ``?n`` in order inside its
    VALUES and nowhere else, as (text before the row, text after it, n); else None."""
    try:
        return _ROWS[sql]
    except KeyError:
        pass
    found: tuple[str, str, int] | None = None
    if sql.startswith("INSERT INTO ") and " RETURNING " not in sql:
        head, marker, rest = sql.partition(" VALUES (")
        row, closing, tail = rest.partition(")")
        slots = [slot.strip() for slot in row.split(",")]
        if (marker and closing and "?" not in head and "?" not in tail
                and slots == [f"?{n}" for n in range(1, len(slots) + 1)]):
            found = head + " VALUES ", tail, len(slots)
    if len(_ROWS) < 1024:
        _ROWS[sql] = found
    return found


def _multi_row(sql: str, rows: int) -> str:
    """``sql`` (an INSERT `_rows_of` understands) inserting ``rows`` rows."""
    try:
        return _MULTI[sql, rows]
    except KeyError:
        pass
    parts = _rows_of(sql)
    assert parts is not None
    head, tail, width = parts
    row = "(" + ", ".join("?" * width) + ")"
    text = head + ", ".join([row] * rows) + tail
    if rows <= 64 and len(_MULTI) < 4096:
        _MULTI[sql, rows] = text
    return text


class _LastEncoded:
    """An encoder that remembers its last value and text: an append binds one recorded
    time to its event row and to each view row it changes (four or five times for a
    checkpoint), and SQLAlchemy's datetime formatting costs ~8 µs a call."""

    __slots__ = ("_encode", "_last")

    def __init__(self, encode: Callable[[Any], Any]) -> None:
        self._encode = encode
        self._last: tuple[Any, Any] = (None, None)

    def __call__(self, value: Any) -> Any:
        last = self._last  # one read: another thread may replace the pair meanwhile
        if last[0] is value:
            return last[1]
        text = self._encode(value)
        self._last = (value, text)
        return text


_ENCODERS: dict[type, Callable[[Any], Any]] = {
    kind: _LastEncoded(processor) if kind is datetime else processor
    for kind, column_type in ((datetime, sa.DateTime(timezone=True)), (uuid.UUID, sa.Uuid()))
    if (processor := column_type.dialect_impl(_DIALECT).bind_processor(_DIALECT)) is not None
}


def encode_value(value: Any) -> Any:
    """A value as SQLAlchemy's column types bind it on SQLite (a datetime as its text, a
    UUID as 32 hex digits), so rows are byte-for-byte what SQLAlchemy would write. A
    subclass (asyncpg's UUID, a datetime subclass) is bound as its base type."""
    kind = type(value)
    try:
        encoder = _ENCODERS_BY_TYPE[kind]
    except KeyError:
        encoder = _ENCODERS_BY_TYPE[kind] = next(
            (found for base, found in _ENCODERS.items() if issubclass(kind, base)), None)
    return value if encoder is None else encoder(value)


_ENCODERS_BY_TYPE: dict[type, Callable[[Any], Any] | None] = dict(_ENCODERS)
"""`_ENCODERS` and every other type seen so far (None: bound as it is)."""

_AS_IS = frozenset({str, int, bytes, float, bool, type(None)})
"""The types most values of an append have, bound as they are."""


def encode_values(values: Sequence[Any]) -> list[Any]:
    """`encode_value` of each value; text, numbers, bytes and None pass without a call."""
    return [value if type(value) in _AS_IS else encode_value(value) for value in values]


Decoders = dict[str, Callable[[Any], Any] | None]
"""How each column of one view reads back (None: as it is)."""
_AS_STORED: Decoders = {}


def view_decoders(views: Mapping[str, sa.Table]) -> dict[str, Decoders]:
    """The decoders of every column of every view, by view name."""
    return {name: {column.name: result_processor(column.type) for column in table.columns}
            for name, table in views.items()}


def decode_view_row(
    names: Sequence[str], row: Sequence[Any], decoders: Decoders
) -> dict[str, Any]:
    """One view row read from SQLite, as the memory views hold it (our types)."""
    return normalise_row({
        name: value if value is None or (decode := decoders.get(name)) is None
        else decode(value)
        for name, value in zip(names, row, strict=True)
    })


def result_processor(column_type: Any) -> Callable[[Any], Any] | None:
    """How SQLAlchemy's column type reads a SQLite value back (None: as it is)."""
    processor: Callable[[Any], Any] | None = column_type.dialect_impl(
        _DIALECT).result_processor(_DIALECT, None)
    return processor


def _prepare_path(path: str, *, create: bool) -> None:
    """Make the file's directory, or refuse a missing file we were told not to set up
    (opening must not leave an empty database behind)."""
    if not create and not Path(path).exists():
        raise SchemaError(f"no database at {path!r}: open it with upgrade=True to create it")
    Path(path).parent.mkdir(parents=True, exist_ok=True)


def _install_connection_setup(engine: AsyncEngine, pragmas: Sequence[str]) -> None:
    sync_engine = engine.sync_engine

    def set_up(dbapi_connection: Any, record: Any) -> None:
        if record.info.get(_SET_UP):
            return
        # Let SQLAlchemy's "begin" event emit BEGIN instead of the driver's implicit one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in pragmas:
            cursor.execute(pragma)
        cursor.close()
        record.info[_SET_UP] = True

    # New connections are set up when made; an application's engine may already pool
    # connections made before we were given it, which are set up on their next checkout.
    event.listen(sync_engine, "connect", set_up)
    event.listen(sync_engine, "checkout", lambda connection, record, _proxy: set_up(
        connection, record))

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        immediate = connection.get_execution_options().get(_WRITE)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
