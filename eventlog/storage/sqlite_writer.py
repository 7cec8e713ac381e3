"""The SQLite append path: one thread, one ``sqlite3`` connection, one hop per append.

Appending through SQLAlchemy over aiosqlite cost ~7 ms of CPU per checkpoint: every
statement was built and compiled anew, and aiosqlite makes several thread hops per
statement. Here the whole append (BEGIN IMMEDIATE, the event rows, blob references, view
changes, COMMIT) runs as one function on a dedicated writer thread: the backend's
sequential append (the same statements, cached by shape, that an application's engine
runs through SQLAlchemy).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from eventlog.storage.base import AppendRequest

Write = Callable[[sqlite3.Connection, AppendRequest], list[int]]
"""Writes one request's statements on the connection (inside the open transaction)."""


class SqliteWriter:
    """Runs appends on one thread with its own connection to the database file."""

    def __init__(self, path: str, pragmas: list[str], write: Write) -> None:
        self._path = path
        self._pragmas = pragmas
        self._write = write
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eventlog-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._closed = False

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
