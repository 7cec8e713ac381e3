"""SQLite calls that cost what they do (issue 30 §4, issue 33 §4), counted on a long thread.

Every statement SQLite runs is counted with ``sqlite3``'s trace callback on every
connection the log opens (its writer's, its readers', SQLAlchemy's), and every hand-back
to the event loop from another thread (``call_soon_threadsafe``: how an executor job, the
writer's group and aiosqlite each return a result) as one thread hop. Before: a thread's
``aget_tuple`` ran 9 statements (three SELECTs, each wrapped in BEGIN…ROLLBACK) in 24 hops,
``latest`` 3 in 8, ``aput`` 13 and ``aput_writes`` 10 (one INSERT per row).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.storage.sqlite import run_statements
from eventlog.storage.sqlite_writer import READERS

pytest.importorskip("langgraph.checkpoint.base")

STEPS = 200
MESSAGE = "x" * 100


class Traced:
    """Statements on every ``sqlite3`` connection opened while it is installed, each with
    the number of connections opened before its own (`since` uses it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statements: list[str] = []
        self.born: list[int] = []
        self.connections = 0
        connect = sqlite3.connect

        def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection = connect(*args, **kwargs)
            birth = self.connections
            self.connections += 1

            def record(sql: str) -> None:
                self.statements.append(sql)
                self.born.append(birth)

            connection.set_trace_callback(record)
            return connection

        monkeypatch.setattr(sqlite3, "connect", traced)


class Hops:
    """Hand-backs to the running loop from other threads."""

    def __init__(self) -> None:
        self.count = 0
        loop = asyncio.get_running_loop()
        original = loop.call_soon_threadsafe
        home = threading.get_ident()

        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != home:
                self.count += 1
            return original(*args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]


def chat(saver: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """A chat thread's put arguments: two channels changed every step."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    versions: dict[str, Any] = {"messages": None, "step": None}
    step = 0
    while True:
        new = {name: saver.get_next_version(versions[name], None) for name in versions}
        versions.update(new)
        checkpoint: dict[str, Any] = dict(empty_checkpoint())
        checkpoint["id"] = str(uuid6(clock_seq=step))
        checkpoint["channel_values"] = {"messages": [MESSAGE] * 18 + [f"step {step}"],
                                        "step": step}
        checkpoint["channel_versions"] = dict(versions)
        yield checkpoint, {"source": "loop", "step": step, "parents": {}}, new
        step += 1


async def test_each_call_on_a_long_thread_is_one_hop_and_few_statements(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    traced = Traced(monkeypatch)
    hops = Hops()
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        saver = AsyncEventlogSaver(log, tenant_id="t")
        steps = chat(saver)
        config: dict[str, Any] = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
        run = uuid.uuid4()

        async def put() -> None:
            nonlocal config
            checkpoint, metadata, new = next(steps)
            config = await saver.aput(config, checkpoint, metadata, new)

        async def writes() -> None:
            await saver.aput_writes(config, [("messages", MESSAGE), ("step", 1)],
                                    str(uuid.uuid4()))

        async def get() -> None:
            found = await saver.aget_tuple(
                {"configurable": {"thread_id": "long", "checkpoint_ns": ""}})
            assert found is not None
            assert found.pending_writes
            assert found.checkpoint["channel_values"]["step"] == STEPS - 1

        async def listed() -> None:
            thread = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
            assert len([t async for t in saver.alist(thread, limit=10)]) == 10

        creates = iter(range(10**6))

        async def create() -> None:
            step = next(creates)
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="session", run_id=run, step=step,
                state={"messages": [MESSAGE] * 18, "step": step}))

        async def latest() -> None:
            assert await log.checkpoints.latest("t", "session") is not None

        async def records() -> None:
            assert len(await log.checkpoints.list("t", "session")) == STEPS

        for _ in range(STEPS):
            await put()
            await writes()
            await create()

        # Every reader thread opens its connection (its PRAGMAs, once) before counting.
        await asyncio.gather(*(latest() for _ in range(4 * READERS)))

        async def counted(call: Callable[[], Awaitable[None]]) -> tuple[int, int, list[str]]:
            """(statements, hops, each statement's first word) of one call. An executor
            job that ends before the loop attaches its callback is handed back from the
            loop's own thread: a read's hop count is then 0, never more than 1."""
            await call()  # warm: caches, connections
            statements, hopped = len(traced.statements), hops.count
            opened = traced.connections
            await call()
            # A reader connection the pool opens only now (a busy machine spread the
            # warm-up over fewer threads) sets its PRAGMAs once: that is the opening's
            # cost, not the call's.
            ran = [sql.split(None, 1)[0] for sql, birth in zip(
                traced.statements[statements:], traced.born[statements:], strict=True)
                if not (birth >= opened and sql.lstrip().upper().startswith("PRAGMA"))]
            return len(ran), hops.count - hopped, ran

        # The checkpoint row, its channel values and its pending writes: three SELECTs in
        # one read transaction (one snapshot), on one connection, in one job; then the
        # messages list's elements, one SELECT for the page (its manifest is this store's
        # own, remembered: issue 33 §1's element storage).
        for read in (get, listed):
            count, hopped, ran = await counted(read)
            assert (count, ran) == (6, ["BEGIN", "SELECT", "WITH", "WITH", "COMMIT", "SELECT"])
            assert hopped <= 2
        # One SELECT: nothing around it.
        for read in (latest, records):
            count, hopped, ran = await counted(read)
            assert (count, ran) == (1, ["SELECT"])
            assert hopped <= 1
        # A put: BEGIN IMMEDIATE, the event, its stream head, the checkpoint, the two
        # channel values, the three blobs, COMMIT: one INSERT per table written (no record
        # rows since migration 0025: a removal folds what they held from the events).
        count, hopped, ran = await counted(put)
        # A put of a grown list is a delta on its previous manifest: the base's row must
        # still be there as it commits (one SELECT inside the write transaction).
        assert (count, hopped, ran) == (8, 1, ["BEGIN", "SELECT", *["INSERT"] * 5, "COMMIT"])
        count, hopped, ran = await counted(writes)
        assert (count, hopped) == (6, 1), ran
        # A create writes one row in each of six tables.
        count, hopped, ran = await counted(create)
        assert (count, hopped) == (8, 1), ran


async def test_reader_connections_close_with_the_log(tmp_path: Path) -> None:
    """The reader's connections are closed when the log closes: no file stays open."""
    path = tmp_path / "log.db"

    def open_files() -> list[str]:
        found = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(str(path)):
                found.append(target)
        return found

    async with open_log(f"sqlite:///{path}") as log:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"a": 1}))
        await asyncio.gather(*(log.checkpoints.latest("t", "s") for _ in range(8)))
        assert open_files()
    assert open_files() == []


def test_rows_written_as_one_insert_land_as_one_by_one(tmp_path: Path) -> None:
    """A run of INSERTs into one table becomes one multi-row INSERT; rows meeting each
    other's key (an upsert adding references, one keeping the first row) end exactly as
    when each statement runs alone, and other tables' statements keep their order."""
    upsert = ("INSERT INTO blobs AS t (k, refs) VALUES (?1, ?2) "
              "ON CONFLICT (k) DO UPDATE SET refs = t.refs + EXCLUDED.refs")
    keep = "INSERT INTO v (k, x) VALUES (?1, ?2) ON CONFLICT (k) DO NOTHING"
    delete = "DELETE FROM v WHERE k = ?1"
    statements = [(upsert, ["a", 1]), (keep, [1, "first"]), (upsert, ["a", 2]),
                  (keep, [1, "second"]), (delete, [1]), (keep, [1, "third"]),
                  (upsert, ["b", 5]), (keep, [2, "two"])]

    def outcome(name: str, merged: bool) -> tuple[list[Any], list[Any], list[str]]:
        database = sqlite3.connect(tmp_path / name, isolation_level=None)
        database.execute("CREATE TABLE blobs (k TEXT PRIMARY KEY, refs INTEGER)")
        database.execute("CREATE TABLE v (k INTEGER PRIMARY KEY, x TEXT)")
        ran: list[str] = []
        database.set_trace_callback(ran.append)
        if merged:
            def generate() -> Iterator[Any]:
                for sql, values in statements:
                    yield sql, values, False
                return []
            run_statements(generate(), database.execute)  # type: ignore[arg-type]
        else:
            for sql, values in statements:
                database.execute(sql, values)
        database.set_trace_callback(None)
        found = (database.execute("SELECT * FROM blobs ORDER BY k").fetchall(),
                 database.execute("SELECT * FROM v ORDER BY k").fetchall(), ran)
        database.close()
        return found

    one_by_one = outcome("alone.db", merged=False)
    merged = outcome("merged.db", merged=True)
    assert merged[:2] == one_by_one[:2] == ([("a", 3), ("b", 5)], [(1, "third"), (2, "two")])
    assert len(one_by_one[2]) == 8
    assert len(merged[2]) == 4  # blobs: one INSERT of three rows; v: 2 rows, DELETE, 2 rows
