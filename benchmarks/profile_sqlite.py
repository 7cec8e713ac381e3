"""Where a SQLite call's time goes (issue 30 §4, issue 33 §4):
``python -m benchmarks.profile_sqlite [--steps N] [--calls N] [--rounds N] [--profile]``.

On a thread of ``--steps`` LangGraph-shaped puts (a chat: ~2 KB of messages and a step
counter changing every step, two pending writes per step), prints per call of ours and of
LangGraph's ``AsyncSqliteSaver`` (both at WAL, ``synchronous = FULL``, files in one
directory): the SQL statements SQLite ran (``sqlite3``'s trace callback on every
connection either saver opens), the thread hops back to the event loop
(``call_soon_threadsafe`` calls: how aiosqlite and an executor hand a result back), the
client CPU (`time.process_time`, every thread of the process: SQLite's work included) and
the calls/s, contestants taking turns every `BLOCK` calls; ratios are medians of the
rounds. ``--profile`` adds a cProfile of our create and our ``aput`` (top functions by
cumulative time).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

from eventlog import CheckpointRecord, open_log

BLOCK = 25
MESSAGE = "x" * 100


class Counted:
    """Counts statements on every ``sqlite3`` connection opened while installed."""

    def __init__(self) -> None:
        self.statements = 0
        self.texts: list[str] = []
        self.keep = False
        self._connect = sqlite3.connect

    def install(self) -> None:
        counted = self

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            connection = counted._connect(*args, **kwargs)
            connection.set_trace_callback(counted._trace)
            return connection

        sqlite3.connect = connect  # type: ignore[assignment]

    def _trace(self, sql: str) -> None:
        self.statements += 1
        if self.keep:
            self.texts.append(" ".join(sql.split()[:3]) if len(sql) > 60 else sql)


class Hops:
    """Counts hand-backs to ``loop`` from other threads (``call_soon_threadsafe``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.count = 0
        original = loop.call_soon_threadsafe
        main = threading.get_ident()

        def counted(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != main:
                self.count += 1
            return original(*args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]


def chat(saver: Any, thread: str) -> Iterator[tuple[dict[str, Any], dict[str, Any],
                                                    dict[str, Any]]]:
    """LangGraph's put arguments of a chat thread, step by step (each names its parent)."""
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


class Thread:
    """One saver's thread: puts, writes and reads of the chat shape."""

    def __init__(self, saver: Any, thread: str) -> None:
        self.saver = saver
        self.steps = chat(saver, thread)
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread,
                                                        "checkpoint_ns": ""}}

    async def put(self) -> None:
        checkpoint, metadata, new = next(self.steps)
        self.config = await self.saver.aput(self.config, checkpoint, metadata, new)

    async def writes(self) -> None:
        await self.saver.aput_writes(self.config, [("messages", MESSAGE), ("step", 1)],
                                     str(uuid.uuid4()))

    async def get(self) -> None:
        assert await self.saver.aget_tuple(
            {"configurable": {**self.config["configurable"], "checkpoint_id": None}})

    async def list10(self) -> None:
        assert [t async for t in self.saver.alist(self.config, limit=10)]


async def main(arguments: argparse.Namespace) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from eventlog.adapters.langgraph import AsyncEventlogSaver

    counted = Counted()
    counted.install()
    hops = Hops(asyncio.get_running_loop())
    async with AsyncExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eventlog-prof-")))
        log = await stack.enter_async_context(open_log(f"sqlite:///{root / 'ours.db'}"))
        ours = AsyncEventlogSaver(log, tenant_id="t")
        peer = await stack.enter_async_context(
            AsyncSqliteSaver.from_conn_string(str(root / "langgraph.db")))
        await peer.setup()
        await peer.conn.execute("PRAGMA synchronous = FULL")
        run_id = uuid.uuid4()
        session = {"n": 0}

        async def create() -> None:
            session["n"] += 1
            n = session["n"]
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{n // 100}", run_id=run_id, step=n,
                state={"messages": [MESSAGE] * 18 + [f"step {n}"], "step": n}))

        async def latest() -> None:
            assert await log.checkpoints.latest("t", "s0")

        async def listed() -> None:
            assert await log.checkpoints.list("t", "s0")

        threads = {"ours": Thread(ours, "long"), "langgraph": Thread(peer, "long")}
        for _ in range(arguments.steps):  # the long thread both read from
            for thread in threads.values():
                await thread.put()
                await thread.writes()
        for _ in range(100):
            await create()

        # Every reader connection is opened (its PRAGMAs run once) before counting.
        await asyncio.gather(*(latest() for _ in range(16)))
        print(f"per call on a {arguments.steps}-step thread (statements, thread hops):")
        calls: dict[str, Callable[[], Awaitable[None]]] = {
            "create": create, "latest": latest, "list (100 records)": listed}
        for name, thread in threads.items():
            calls |= {f"{name} aput": thread.put, f"{name} aput_writes": thread.writes,
                      f"{name} aget_tuple": thread.get, f"{name} alist(limit=10)": thread.list10}
        for name, call in calls.items():
            await call()  # warm
            statements, hopped = counted.statements, hops.count
            counted.keep, counted.texts = True, []
            await call()
            counted.keep = False
            print(f"  {name:28} {counted.statements - statements:3} statements "
                  f"{hops.count - hopped:3} hops   \n      {' · '.join(counted.texts)}")

        contestants: dict[str, Callable[[], Awaitable[None]]] = {
            "create": create, "ours_aput": Thread(ours, "bench").put,
            "langgraph_aput": Thread(peer, "bench").put,
            "ours_aget_tuple": threads["ours"].get,
            "langgraph_aget_tuple": threads["langgraph"].get,
            "ours_alist10": threads["ours"].list10,
            "langgraph_alist10": threads["langgraph"].list10}
        peers = {"create": "langgraph_aput", "ours_aput": "langgraph_aput",
                 "ours_aget_tuple": "langgraph_aget_tuple", "ours_alist10": "langgraph_alist10"}
        rates: dict[str, list[float]] = {name: [] for name in contestants}
        cpu: dict[str, list[float]] = {name: [] for name in contestants}
        for _ in range(arguments.rounds):
            wall = dict.fromkeys(contestants, 0.0)
            used = dict.fromkeys(contestants, 0.0)
            for _block in range(0, arguments.calls, BLOCK):
                for name, call in contestants.items():
                    began, began_cpu = time.perf_counter(), time.process_time()
                    for _ in range(BLOCK):
                        await call()
                    wall[name] += time.perf_counter() - began
                    used[name] += time.process_time() - began_cpu
            calls_made = arguments.calls // BLOCK * BLOCK
            for name in contestants:
                rates[name].append(calls_made / wall[name])
                cpu[name].append(used[name] / calls_made * 1e6)
        print(f"\nthroughput and client CPU, {arguments.rounds} rounds of "
              f"{arguments.calls} calls, turns of {BLOCK}:")
        for name in contestants:
            peer_name = peers.get(name, name)
            ratios = [r / b for r, b in zip(rates[name], rates[peer_name], strict=True)]
            print(f"  {name:20} {statistics.median(rates[name]):7.0f}/s  "
                  f"÷ {peer_name} {statistics.median(ratios):.2f}× "
                  f"({min(ratios):.2f}–{max(ratios):.2f})  "
                  f"client CPU {statistics.median(cpu[name]):6.0f} µs/call "
                  f"({min(cpu[name]):.0f}–{max(cpu[name]):.0f})")

        if arguments.profile:
            from eventlog.storage import sqlite_writer

            drain = sqlite_writer.SqliteWriter._drain
            for name in ("create", "ours_aput", "langgraph_aput"):
                on_writer = cProfile.Profile()
                spent = [0.0]

                def profiled_drain(self: Any, on_writer: Any = on_writer,
                                   spent: list[float] = spent) -> None:
                    began = time.thread_time()
                    on_writer.enable()
                    try:
                        drain(self)
                    finally:
                        on_writer.disable()
                        spent[0] += time.thread_time() - began

                sqlite_writer.SqliteWriter._drain = profiled_drain  # type: ignore[method-assign]
                with profiled(name):
                    for _ in range(200):
                        await contestants[name]()
                sqlite_writer.SqliteWriter._drain = drain  # type: ignore[method-assign]
                if spent[0]:
                    print(f"--- writer thread: {spent[0] / 200 * 1e6:.0f} µs of CPU per call "
                          "(profiled), by own time:")
                    out = io.StringIO()
                    pstats.Stats(on_writer, stream=out).sort_stats("tottime").print_stats(15)
                    print("\n".join(out.getvalue().splitlines()[4:30]))


@contextmanager
def profiled(name: str) -> Iterator[None]:
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
        print(f"\n=== cProfile of 200 × {name} (loop thread only), by own time ===")
        print("\n".join(out.getvalue().splitlines()[:45]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    asyncio.run(main(parser.parse_args()))
