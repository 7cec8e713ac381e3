"""The embedded default (``sqlite:///path.db``): SQLAlchemy Core over aiosqlite, WAL.

Writes take the database lock up front (``BEGIN IMMEDIATE``), so a write transaction
never fails half-way on a read-to-write lock upgrade, and there is one writer at a time:
positions become visible in the order they were assigned, which makes position order
gap-safe. Readers never block writers in WAL mode.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from eventlog.errors import CommitOutcomeUnknown, EventLogError, SchemaError, StorageError
from eventlog.storage.base import AppendRequest, StreamVersionTaken
from eventlog.storage.sql import SqlBackend
from eventlog.storage.sqlite_writer import SqliteWriter

_WRITE = "eventlog_write"
_SET_UP = "eventlog_set_up"
BUSY_TIMEOUT_MS = 60_000
CONNECTION_PRAGMAS = [
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
]
"""Run on every connection: wait for other writers, write-ahead log, fsync each commit."""


class SqliteBackend(SqlBackend):
    """A SQLite file shared safely by any number of processes on one machine."""

    name = "sqlite"
    dialect = "sqlite"

    def __init__(self, path: str | None = None, *, engine: AsyncEngine | None = None) -> None:
        if engine is None:
            assert path is not None
            self.path: str | None = path
            engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
            owned = True
        else:
            self.path, owned = engine.url.database, False
        _install_connection_setup(engine)
        super().__init__(engine, owned=owned, schema=None)
        # Our own file: appends take the one-hop writer thread. An application's engine (or
        # an in-memory database, which another connection would not see) keeps SQLAlchemy.
        self._writer: SqliteWriter | None = None
        if owned and self.path and self.path != ":memory:":
            tables = {**self.views, "events": self.events, "blobs": self.blobs}
            self._writer = SqliteWriter(self.path, tables, CONNECTION_PRAGMAS,
                                        engine.sync_engine.dialect)

    async def append(self, request: AppendRequest) -> list[int]:
        if self._writer is None:
            return await super().append(request)
        try:
            return await self._writer.append(request)
        except Exception as error:
            raise self.translate(error, "append") from error

    async def close(self) -> None:
        if self._writer is not None:
            await self._writer.close()
        await super().close()

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

    @asynccontextmanager
    async def write_transaction(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as connection:
            connection = await connection.execution_options(**{_WRITE: True})
            async with connection.begin():
                yield connection

    def dialect_insert(self, table: sa.Table) -> Any:
        return sqlite_insert(table)

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


def _prepare_path(path: str, *, create: bool) -> None:
    """Make the file's directory, or refuse a missing file we were told not to set up
    (opening must not leave an empty database behind)."""
    if not create and not Path(path).exists():
        raise SchemaError(f"no database at {path!r}: open it with upgrade=True to create it")
    Path(path).parent.mkdir(parents=True, exist_ok=True)


def _install_connection_setup(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    def set_up(dbapi_connection: Any, record: Any) -> None:
        if record.info.get(_SET_UP):
            return
        # Let SQLAlchemy's "begin" event emit BEGIN instead of the driver's implicit one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in CONNECTION_PRAGMAS:
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
