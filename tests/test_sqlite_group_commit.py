"""SQLite group commit: appends waiting for the writer thread share one transaction, and
each keeps its own atomicity inside it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from eventlog import NO_STREAM, EventLog, StreamAppend, VersionConflict, open_log
from eventlog.storage.base import AppendRequest
from eventlog.storage.sqlite_writer import GROUP_LIMIT, SqliteWriter, WriterClosed
from tests.events import Noted


def writer_of(log: EventLog) -> SqliteWriter:
    writer = getattr(log.storage, "_writer", None)
    assert isinstance(writer, SqliteWriter)
    return writer


@contextmanager
def database_locked(path: Path) -> Iterator[None]:
    """Another connection holds the write lock: the writer's BEGIN IMMEDIATE waits."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


async def first_blocked(writer: SqliteWriter, append: Coroutine[Any, Any, Any]
                        ) -> asyncio.Task[Any]:
    """Start ``append`` and wait until the writer thread has taken it (it then waits in
    BEGIN IMMEDIATE on the held lock): whatever comes next queues behind it."""
    before = writer.transactions
    task = asyncio.create_task(append)
    deadline = time.monotonic() + 10
    while writer.transactions == before:
        assert time.monotonic() < deadline, "the writer never took the first call"
        await asyncio.sleep(0.005)
    return task


async def queued(writer: SqliteWriter, count: int) -> None:
    """Wait until ``count`` calls wait in the writer's queue (the first one is blocked)."""
    deadline = time.monotonic() + 10
    while len(writer._queue) < count:
        assert time.monotonic() < deadline, f"only {len(writer._queue)} calls queued"
        await asyncio.sleep(0.005)


async def test_waiting_appends_share_one_transaction(tmp_path: Path) -> None:
    """Twenty appends that arrive while the writer waits join the transaction it waits to
    begin (they are queued before its COMMIT), and all of them are stored and verify."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        writer = writer_of(log)
        await log.append("t", "warm", [Noted(text="w")])
        before = writer.transactions
        with database_locked(path):
            first = await first_blocked(writer, log.append("t", "first", [Noted(text="0")]))
            rest = [asyncio.create_task(log.append("t", f"s{i}", [Noted(text=str(i))]))
                    for i in range(20)]
            await queued(writer, 20)
        results = await asyncio.gather(first, *rest)
        assert 1 == writer.transactions - before
        assert [1] * 21 == [result.version for result in results]
        assert len({p for r in results for p in r.positions}) == 21
        report = await log.verify()
        assert (True, 22) == (report.ok, report.events)


async def test_a_failing_append_in_a_group_fails_alone(tmp_path: Path) -> None:
    """Two appends expecting a new stream race in one group: one stores its event, the
    other is rolled back to its savepoint and conflicts; the rest of the group commits.
    (One of them is a batch: two single appends of one stream from one process take
    turns before they reach the writer, `Appender.turn`, so they never race in a group.)"""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        writer = writer_of(log)
        with database_locked(path):
            blocker = await first_blocked(writer, log.append("t", "blocker",
                                                             [Noted(text="b")]))
            racers = [
                asyncio.create_task(log.append("t", "contested", [Noted(text="0")],
                                               expected_version=NO_STREAM)),
                asyncio.create_task(log.append_batch([StreamAppend(
                    tenant_id="t", stream_id="contested", events=[Noted(text="1")],
                    expected_version=NO_STREAM)])),
            ]
            others = [asyncio.create_task(log.append("t", f"o{i}", [Noted(text=str(i))]))
                      for i in range(5)]
            await queued(writer, 7)
        outcomes = await asyncio.gather(*racers, return_exceptions=True)
        await asyncio.gather(blocker, *others)
        assert 1 == sum(isinstance(o, VersionConflict) for o in outcomes)
        assert 1 == sum(not isinstance(o, BaseException) for o in outcomes)
        stored = [event async for event in log.read_stream("t", "contested")]
        assert 1 == len(stored)
        report = await log.verify()
        assert (True, 7) == (report.ok, report.events)


async def test_an_error_mid_call_rolls_back_that_call_only(tmp_path: Path) -> None:
    """A call whose second statement fails leaves none of its rows; its neighbours in
    the transaction commit theirs."""
    path = tmp_path / "raw.db"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("CREATE TABLE rows (name TEXT PRIMARY KEY)")
    setup.close()

    def write(connection: sqlite3.Connection, request: AppendRequest) -> list[int]:
        connection.execute("INSERT INTO rows VALUES (?)", (request.stream_id,))
        if request.stream_id.startswith("bad"):
            raise ValueError(f"refused {request.stream_id}")
        connection.execute("INSERT INTO rows VALUES (?)", (request.stream_id + "/2",))
        return [1]

    def request(stream: str) -> AppendRequest:
        return AppendRequest(tenant_id="t", stream_id=stream, events=[], changes=[])

    writer = SqliteWriter(str(path), ["PRAGMA busy_timeout = 60000"], write)
    try:
        with database_locked(path):
            first = await first_blocked(writer, writer.append_batch([request("a")]))
            calls = [asyncio.create_task(writer.append_batch(
                [request(name), request(name + "+")])) for name in ("b", "bad", "c")]
            await queued(writer, 3)
        outcomes: list[Any] = await asyncio.gather(first, *calls, return_exceptions=True)
    finally:
        await writer.close()
    assert [[[1]], [[1], [1]], "refused bad", [[1], [1]]] == [
        str(o) if isinstance(o, ValueError) else o for o in outcomes]
    check = sqlite3.connect(path)
    names = sorted(row[0] for row in check.execute("SELECT name FROM rows"))
    check.close()
    assert ["a", "a/2", "b", "b+", "b+/2", "b/2", "c", "c+", "c+/2", "c/2"] == names
    assert 1 == writer.transactions  # the queued calls joined the first one's


async def test_a_closed_writer_refuses_appends(tmp_path: Path) -> None:
    """After close, an append fails at once instead of waiting for a thread that is gone."""
    writer = SqliteWriter(str(tmp_path / "raw.db"), [], lambda connection, request: [])
    await writer.close()
    with pytest.raises(WriterClosed, match="closed"):
        await asyncio.wait_for(writer.append_batch([]), timeout=5)


async def test_an_append_cancelled_while_queued_is_not_written(tmp_path: Path) -> None:
    """A caller cancelled while its append waits in the queue leaves nothing behind; the
    appends queued with it are written."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        writer = writer_of(log)
        with database_locked(path):
            first = await first_blocked(writer, log.append("t", "first", [Noted(text="0")]))
            doomed = asyncio.create_task(log.append("t", "doomed", [Noted(text="x")]))
            kept = asyncio.create_task(log.append("t", "kept", [Noted(text="k")]))
            await queued(writer, 2)
            doomed.cancel()
            with pytest.raises(asyncio.CancelledError):
                await doomed
        await asyncio.gather(first, kept)
        assert [] == [event async for event in log.read_stream("t", "doomed")]
        assert 1 == len([event async for event in log.read_stream("t", "kept")])
        report = await log.verify()
        assert (True, 2) == (report.ok, report.events)


async def test_a_group_wakes_its_callers_loop_once(tmp_path: Path) -> None:
    """The writer hands a whole group's outcomes to the callers' loop in one wake-up
    (each `call_soon_threadsafe` writes to the loop's self-pipe), not one per call."""
    path = tmp_path / "log.db"
    loop = asyncio.get_running_loop()
    async with open_log(f"sqlite:///{path}") as log:
        writer = writer_of(log)
        with database_locked(path):
            first = await first_blocked(writer, log.append("t", "first", [Noted(text="0")]))
            rest = [asyncio.create_task(log.append("t", f"s{i}", [Noted(text=str(i))]))
                    for i in range(10)]
            await queued(writer, 10)
            wakes: list[object] = []
            original = loop.call_soon_threadsafe

            def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
                if threading.current_thread() is not threading.main_thread():
                    wakes.append(callback)
                return original(callback, *args, **kwargs)

            loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        try:
            results = await asyncio.gather(first, *rest)
        finally:
            del loop.call_soon_threadsafe
        assert [1] * 11 == [result.version for result in results]
        assert 1 == len(wakes)  # the ten queued joined the first call's transaction


async def test_calls_arriving_before_commit_join_up_to_the_limit(tmp_path: Path) -> None:
    """Calls queued while a transaction is open join it before its COMMIT, up to
    `GROUP_LIMIT` calls in all; the rest commit in the next transaction."""
    path = tmp_path / "raw.db"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("CREATE TABLE rows (name TEXT PRIMARY KEY)")
    setup.close()

    def write(connection: sqlite3.Connection, request: AppendRequest) -> list[int]:
        connection.execute("INSERT INTO rows VALUES (?)", (request.stream_id,))
        return [connection.total_changes]

    def request(stream: str) -> AppendRequest:
        return AppendRequest(tenant_id="t", stream_id=stream, events=[], changes=[])

    writer = SqliteWriter(str(path), ["PRAGMA busy_timeout = 60000"], write)
    extra = 6
    try:
        with database_locked(path):
            first = await first_blocked(writer, writer.append_batch([request("first")]))
            calls = [asyncio.create_task(writer.append_batch([request(f"c{n}")]))
                     for n in range(GROUP_LIMIT - 1 + extra)]
            await queued(writer, GROUP_LIMIT - 1 + extra)
        outcomes = await asyncio.gather(first, *calls)
    finally:
        await writer.close()
    assert 2 == writer.transactions
    # total_changes counts the rows of this connection: one transaction of GROUP_LIMIT
    # rows, then the next one's
    assert list(range(1, GROUP_LIMIT + extra + 1)) == [o[0][0] for o in outcomes]
    check = sqlite3.connect(path)
    assert GROUP_LIMIT + extra == check.execute("SELECT count(*) FROM rows").fetchone()[0]
    check.close()
