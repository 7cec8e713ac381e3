"""The SQLite append path (one thread, one ``sqlite3`` connection, group commit) and its
read path (`SqliteReader`: a few threads, a ``sqlite3`` connection each, one job a read).

Appending through SQLAlchemy over aiosqlite cost ~7 ms of CPU per checkpoint: every
statement was built and compiled anew, and aiosqlite makes several thread hops per
statement. Here the whole append (BEGIN IMMEDIATE, the event rows, blob references, view
changes, COMMIT) runs as one function on a dedicated writer thread: the backend's
sequential append (the same statements, cached by shape, that an application's engine
runs through SQLAlchemy).

Group commit: appends that arrive while the thread is busy wait in a queue, and the next
transaction takes all of them, so one COMMIT (one fsync at ``synchronous = FULL``) serves
every caller waiting at that moment. Each call keeps its own atomicity: when the
transaction holds more than one call, each runs inside its own SAVEPOINT, and a call that
fails (its stream version taken, say) is rolled back to it alone and gets its own error
while the others commit. A call that arrives when the thread is idle starts at once: no
call ever waits for company. But calls that arrive while a transaction writes (before its
COMMIT) join it, up to `GROUP_LIMIT` calls: with 8 tasks on one log the first call no
longer commits alone while the other seven queue behind its flush (two flushes per eight
creates), since they arrive one by one as the loop makes them, while it writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, TypeVar

from eventlog.storage.base import AppendRequest

Write = Callable[[sqlite3.Connection, AppendRequest], list[int]]
"""Writes one request's statements on the connection (inside the open transaction)."""


Build = Callable[[sqlite3.Connection], AppendRequest]
"""Makes one request inside the open transaction (reading the stream head it chains onto)."""


GROUP_LIMIT = 64
"""Calls a transaction takes in at most (more wait for the next one), so the first call's
commit is not put off indefinitely by a steady stream of later ones."""


class _Call(NamedTuple):
    """One `SqliteWriter.append_batch` call waiting for the writer thread."""

    requests: Sequence[AppendRequest]
    future: asyncio.Future[list[list[int]]]
    loop: asyncio.AbstractEventLoop
    build: Build | None = None


class WriterClosed(RuntimeError):
    """An append reached a writer that was already closed."""


class SqliteWriter:
    """Runs appends on one thread with its own connection to the database file."""

    def __init__(self, path: str, pragmas: list[str], write: Write) -> None:
        self._path = path
        self._pragmas = pragmas
        self._write = write
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eventlog-sqlite")
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._queue: list[_Call] = []
        self._draining = False
        self.transactions = 0
        """Transactions committed or attempted so far (group commit makes it smaller than
        the number of calls)."""

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Commit every request in one transaction; each one's positions, in order.

        The transaction may also hold other callers' appends (group commit); this call's
        requests are still all or nothing.
        """
        return await self._call(requests, None)

    async def append_built(self, build: Build) -> list[int]:
        """Commit the request ``build`` makes inside the write transaction (where no other
        writer can append: it reads the head it chains onto there); its positions."""
        return (await self._call((), build))[0]

    async def _call(self, requests: Sequence[AppendRequest], build: Build | None
                    ) -> list[list[int]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[list[int]]] = loop.create_future()
        with self._lock:
            if self._closed:
                raise WriterClosed("the SQLite writer is closed")
            self._queue.append(_Call(requests, future, loop, build))
            start = not self._draining
            self._draining = True
        if start:
            self._thread.submit(self._drain)
        return await future

    async def close(self) -> None:
        """Close the connection (on its own thread, after every queued append) and stop
        the thread; again, nothing."""
        with self._lock:
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

    def _drain(self) -> None:
        """Commit what is queued, group by group, until the queue is empty."""
        while True:
            with self._lock:
                calls, self._queue = self._queue, []
                if not calls:
                    self._draining = False
                    return
            calls = _live(calls)
            if not calls:
                continue
            outcomes = self._commit_group(calls)  # may add calls that arrived meanwhile
            # One wake-up of each caller's loop for the whole group, not one per call.
            by_loop: dict[asyncio.AbstractEventLoop, list[_Settled]] = {}
            for call, outcome in zip(calls, outcomes, strict=True):
                by_loop.setdefault(call.loop, []).append((call.future, outcome))
            for loop, settled in by_loop.items():
                # A RuntimeError: the caller's loop is closed, nobody is waiting.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle, settled)

    def _late_calls(self, room: int) -> list[_Call]:
        """Up to ``room`` calls queued since the group began (to join its transaction)."""
        with self._lock:
            late, self._queue = self._queue[:room], self._queue[room:]
        return _live(late)

    def _commit_group(self, calls: list[_Call]) -> list[list[list[int]] | BaseException]:
        """One transaction for every call, and for those that arrive before its COMMIT
        (appended to ``calls``): each call's positions, or the error it alone failed with,
        or (when the transaction itself fails) that error for all."""
        try:
            connection = self._connect()
            self.transactions += 1
            connection.execute("BEGIN IMMEDIATE")
        except Exception as error:
            return [error] * len(calls)
        outcomes: list[list[list[int]] | BaseException] = []
        isolate = len(calls) > 1
        try:
            for call in calls:
                outcomes.append(self._write_call(connection, call, isolate))
            while len(calls) < GROUP_LIMIT and (late := self._late_calls(
                    GROUP_LIMIT - len(calls))):
                for call in late:  # each in its savepoint, whatever the first ones did
                    calls.append(call)
                    outcomes.append(self._write_call(connection, call, True))
            connection.execute("COMMIT")
        except BaseException as error:
            # A failed COMMIT (disk full, I/O error), or SQLite rolling the whole
            # transaction back on an error: nothing of the group is stored. The next
            # append must not run inside a transaction left open.
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            return [error] * len(calls)
        return outcomes

    def _write_call(self, connection: sqlite3.Connection, call: _Call,
                    isolate: bool) -> list[list[int]] | BaseException:
        if not isolate:
            return self._write_requests(connection, call)
        connection.execute("SAVEPOINT call")
        try:
            positions = self._write_requests(connection, call)
        except Exception as error:
            if not connection.in_transaction:
                raise  # SQLite gave up the transaction: the group fails as one
            connection.execute("ROLLBACK TO call")
            connection.execute("RELEASE call")
            return error
        connection.execute("RELEASE call")
        return positions

    def _write_requests(self, connection: sqlite3.Connection, call: _Call) -> list[list[int]]:
        requests = call.requests if call.build is None else [call.build(connection)]
        return [self._write(connection, request) for request in requests]


def _live(calls: list[_Call]) -> list[_Call]:
    """The calls whose caller still waits. A caller cancelled before its call began is not
    written (as a queued executor job is dropped when its caller is cancelled). Reading
    the flag from the writer thread races only with a cancel that comes too late to count
    anyway."""
    return [call for call in calls if not call.future.cancelled()]


_Settled = tuple[asyncio.Future[list[list[int]]], list[list[int]] | BaseException]
"""One call's future and what it gets: its positions or its error."""


def _settle(settled: list[_Settled]) -> None:
    """On the callers' loop: give each future of a group its outcome."""
    for future, outcome in settled:
        if future.done():  # the caller was cancelled
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


T = TypeVar("T")

READERS = 4
"""Reader threads (each with its own connection): reads of concurrent tasks run side by
side (SQLite releases the GIL while it steps a statement), and one long scan does not
hold up every other read."""


class SqliteReader:
    """Runs reads on a few threads, each with its own plain ``sqlite3`` connection in
    autocommit mode: a whole read (its statements, the decoding of its rows) is ONE job,
    so ONE thread hop per call, and a read of one statement runs without a transaction
    around it (a single SELECT reads one snapshot by itself; WAL readers never wait for
    the writer). aiosqlite made three hops per statement and SQLAlchemy wrapped every read
    in ``BEGIN … ROLLBACK``: 24 hops and 9 statements for a thread's ``aget_tuple``."""

    def __init__(self, path: str, pragmas: Sequence[str], workers: int = READERS) -> None:
        self._path = path
        self._pragmas = list(pragmas)
        self._threads = ThreadPoolExecutor(max_workers=workers,
                                           thread_name_prefix="eventlog-sqlite-read")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False

    async def run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """``job`` on a reader thread's connection; its result (or its error)."""
        if self._closed:
            raise WriterClosed("the SQLite reader is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._run, job)

    def _run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self._path, isolation_level=None,
                                         check_same_thread=False)
            for pragma in self._pragmas:
                connection.execute(pragma)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        try:
            return job(connection)
        finally:
            if connection.in_transaction:  # a job's error inside its own BEGIN
                connection.execute("ROLLBACK")

    async def close(self) -> None:
        """Wait for the reads under way, close every connection; again, nothing."""
        if self._closed:
            return
        self._closed = True
        await asyncio.get_running_loop().run_in_executor(None, self._threads.shutdown, True)
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
