"""A small asyncpg connection pool for the PostgreSQL hot paths.

Why not ``asyncpg.Pool``: measured here, its acquire and release cost ~50 µs per call
(asyncio timeouts, a release task), half a database round trip, on every append. The hot
paths only need this: hand out an idle connection (last in, first out), open a new one
while under the size limit, otherwise wait for a release. A connection that saw an error
or a cancellation is closed rather than reused, since it may be mid-protocol, unless the
error is the server's answer to a statement (`reusable`): a unique violation (a lost
version race, a row put again), a refused requirement, a deadlock the server broke. Those
were answered in full and leave the connection idle, and closing them made each lost race
cost a new connection (6-7 ms with its prepared statements: 22 of 23 connections thrown
away by a LangGraph graph that resumes a task). One the server closed while it sat idle is
dropped when it would be handed out.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg


class ConnectionPool:
    """At most ``max_size`` asyncpg connections to ``dsn``, opened on demand with
    ``connect_options`` (keyword arguments of `asyncpg.connect`), each new one given
    ``setup`` (a statement run once, before its first use) if there is one."""

    def __init__(self, dsn: str, max_size: int, *, setup: str | None = None,
                 **connect_options: Any) -> None:
        self.dsn = dsn
        self.max_size = max_size
        self.setup = setup
        self.connect_options = connect_options
        self._idle: list[Any] = []
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """Borrow a connection for one or more statements outside any transaction."""
        connection = await self._acquire()
        try:
            yield connection
        except BaseException as error:
            if reusable(connection, error):
                self._release(connection)
            else:
                self._discard(connection)
            raise
        self._release(connection)

    async def close(self) -> None:
        """Close every idle connection; borrowed ones close when returned."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            self._open -= 1
            await connection.close()

    async def _acquire(self) -> Any:
        while True:
            if self._closed:
                raise RuntimeError("the connection pool is closed")
            while self._idle:
                connection = self._idle.pop()
                if not connection.is_closed():
                    return connection
                # The server ended it while it sat idle (a restart, pg_terminate_backend,
                # an idle timeout): drop it instead of failing the caller's statement.
                self._discard(connection)
            if self._open < self.max_size:
                self._open += 1
                try:
                    return await self._connect()
                except BaseException:
                    self._open -= 1
                    self._wake_one()
                    raise
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    async def _connect(self) -> Any:
        connection = await asyncpg.connect(self.dsn, **self.connect_options)
        if self.setup is not None:
            try:
                await connection.execute(self.setup)
            except BaseException:
                connection.terminate()
                raise
        return connection

    def _release(self, connection: Any) -> None:
        if self._closed or connection.is_closed() or connection.is_in_transaction():
            self._discard(connection)
            return
        self._idle.append(connection)
        self._wake_one()

    def _discard(self, connection: Any) -> None:
        self._open -= 1
        connection.terminate()
        self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


_CLOSING_CLASSES = ("08", "57P", "XX")
"""SQLSTATE classes after which a connection is not trusted: connection exceptions, the
server shutting down or unable to connect, internal errors."""


def reusable(connection: Any, error: BaseException) -> bool:
    """Whether ``connection`` may go back to the pool after ``error`` escaped its block:
    only after an error the server reported for a statement (the protocol then ends with
    the server ready for the next one), outside any transaction, on an open connection."""
    if not isinstance(error, asyncpg.PostgresError):
        return False
    state = getattr(error, "sqlstate", None) or ""
    if state.startswith(_CLOSING_CLASSES):
        return False
    return not connection.is_closed() and not connection.is_in_transaction()
