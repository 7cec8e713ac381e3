"""The embedded default (``sqlite:///path.db``): a SQLite file in WAL mode.

Writes take the database lock up front (``BEGIN IMMEDIATE``), so a write transaction
never fails half-way on a read-to-write lock upgrade, and there is one writer at a time:
positions become visible in the order they were assigned, which makes position order
gap-safe. Readers never block writers in WAL mode.

Appends to our own file run on one writer thread over ``sqlite3`` (`SqliteWriter`); an
application's engine, or an in-memory database, appends through SQLAlchemy's connection.
Both run the same statements (`SqlBackend.sequential`); reads go through SQLAlchemy over
aiosqlite.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

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
from eventlog.storage.defaults import OneWriter
from eventlog.storage.sql import (
    CHECKED_COLUMNS,
    EVENT_READ_COLUMNS,
    SCAN_PAGE,
    SqlBackend,
    normalise_row,
    stored_event,
)
from eventlog.storage.sqlite_writer import SqliteWriter
from eventlog.storage.sqltext import Positional, SqliteDialect, Statement
from eventlog.storage.sqltree import SqliteTree

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
_DIALECT = sqlite_dialect.dialect()


class SqliteBackend(OneWriter, SqlBackend[AsyncConnection], SqliteTree):
    """A SQLite file shared safely by any number of processes on one machine."""

    name = "sqlite"
    dialect_name = "sqlite"
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
        if self.owned and self.path and self.path != ":memory:":
            self._writer = SqliteWriter(self.path, self.pragmas,
                                        lambda c, r: run_statements(
                                            self.sequential.statements(r), c.execute))

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

    async def fetch_view_rows(
        self, table: str, sql: str, params: list[Any]
    ) -> list[dict[str, Any]]:
        decoders = self._decoders[table]
        async with self.read_connection() as connection:
            result = await connection.exec_driver_sql(sql, tuple(map(encode_value, params)))
            names = list(result.keys())
            rows = result.all()
        return [decode_view_row(names, row, decoders) for row in rows]

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
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
        events = self.events
        statement = self._select_events().where(events.c.position > cursors.decode_position(after))
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        rows = await self._fetch_events(statement.order_by(events.c.position).limit(limit))
        return rows, cursors.encode_position(rows[-1].position) if rows else after

    async def scan_streams(self, tenant_id: str | None) -> AsyncIterator[StoredEvent]:
        events = self.events
        order = (events.c.tenant_id, events.c.stream_id, events.c.stream_version)
        last: tuple[str, str, int] | None = None
        while True:
            statement = self._select_events().order_by(*order).limit(SCAN_PAGE)
            if tenant_id is not None:
                statement = statement.where(events.c.tenant_id == tenant_id)
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

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
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
    SQLAlchemy's ``exec_driver_sql``); the positions of its events."""
    result: Any = None
    try:
        while True:
            sql, values, returns = statements.send(result)
            cursor = execute(sql, encode_values(values))
            result = cursor.fetchone()[0] if returns else None
    except StopIteration as done:
        positions: list[int] = done.value
        return positions


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
