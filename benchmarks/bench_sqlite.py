"""SQLite checkpoint create next to LangGraph's SQLite saver and raw sqlite3 (issue 25,
goals 4 and 5), at two durability levels, both savers always at the same one.

LangGraph's ``AsyncSqliteSaver`` runs aiosqlite with SQLite's defaults: its ``setup`` turns
on WAL and leaves ``synchronous`` at SQLite's default, FULL (the harness prints what it
found). So ``synchronous = FULL`` is both savers' default and equal durability (every
commit fsyncs the write-ahead log: an acknowledged checkpoint survives a power cut); then
both at NORMAL (fsync only at checkpoints), where the CPU per call decides.

The payload is the shape a one-node chat graph writes: every step changes ``messages``
(~2 KB) and ``step``; LangGraph's puts carry the version strings its
``get_next_version`` makes and uuid6 ids, each naming its parent; our create stores the
same two values as its state. Contestants, at each level, in files of one directory:
- raw ``sqlite3`` autocommit INSERT of ~2 KB, called inline (no thread);
- LangGraph's ``AsyncSqliteSaver.aput`` on its one aiosqlite connection;
- our ``checkpoints.create`` on ``sqlite:///…?`` (the writer thread).
Then 8 writers at once, each on its own session: 8 tasks creating on one log (their
appends share commits: group commit), 8 threads each inserting on a raw ``sqlite3``
connection of its own, and 8 tasks putting through LangGraph's saver (its connection and
lock are its pool). Each ratio is the median over rounds; inside a round the contestants
take turns every `BLOCK` calls (every 12 calls of each writer when 8 write at once), each
contestant's rate being its calls over its own time: this virtual disk's flush time swings
tenfold within seconds (raw FULL commits at 170/s, then 1,300/s, a block apart), and one
block of 300 calls each, one contestant after the other, measured the disk as much as the
saver.
Caveat: the fsync cost is the disk's (here a virtual disk); ratios are what carry over.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import Results, rounds, section, size
from eventlog import CheckpointRecord, EventLog, open_log

LEVELS = ("FULL", "NORMAL")
"""FULL first: both savers' default. NORMAL: both at NORMAL."""
MESSAGES = ["x" * 100] * 18  # ~2 KB
WRITERS = 8
BLOCK = 50
"""Calls a contestant makes in one turn (see the module's docstring)."""
PER_THREAD = 100
"""LangGraph's puts go to thread ``lg-{call // PER_THREAD}``, ours to session ``s…`` alike."""


def state(step: int) -> dict[str, Any]:
    """The channel values of one step: both changed."""
    return {"messages": [*MESSAGES, f"step {step}"], "step": step}


class ChatThreads:
    """LangGraph puts of the chat shape, thread by thread, each naming its parent."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self._steps: dict[str, Iterator[tuple[dict[str, Any], dict[str, Any],
                                              dict[str, Any]]]] = {}
        self._configs: dict[str, dict[str, Any]] = {}

    async def aput(self, call: int) -> None:
        thread = f"lg-{call // PER_THREAD}"
        if thread not in self._steps:
            self._steps[thread] = self._chat_steps()
            self._configs[thread] = {"configurable": {"thread_id": thread,
                                                      "checkpoint_ns": ""}}
        checkpoint, metadata, new = next(self._steps[thread])
        self._configs[thread] = await self.saver.aput(self._configs[thread], checkpoint,
                                                      metadata, new)

    def _chat_steps(self) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6

        versions: dict[str, Any] = {"messages": None, "step": None}
        step = 0
        while True:
            new = {name: self.saver.get_next_version(versions[name], None)
                   for name in versions}
            versions.update(new)
            checkpoint: dict[str, Any] = dict(empty_checkpoint())
            checkpoint["id"] = str(uuid6(clock_seq=step))
            checkpoint["channel_values"] = state(step)
            checkpoint["channel_versions"] = dict(versions)
            yield checkpoint, {"source": "loop", "step": step, "parents": {}}, new
            step += 1


async def take_turns(count: int, **contestants: Callable[[int], Awaitable[object]]
                     ) -> dict[str, list[float]]:
    """Calls/s of each contestant in each of `rounds()` rounds of ``count`` calls, the
    contestants taking turns every `BLOCK` calls (``operation(i)`` gets every i once)."""
    figures: dict[str, list[float]] = {name: [] for name in contestants}
    for number in range(rounds()):
        spent = dict.fromkeys(contestants, 0.0)
        for start in range(number * count, (number + 1) * count, BLOCK):
            for name, operation in contestants.items():
                began = time.perf_counter()
                for index in range(start, min(start + BLOCK, (number + 1) * count)):
                    await operation(index)
                spent[name] += time.perf_counter() - began
        for name in contestants:
            figures[name].append(count / spent[name])
    return figures


async def run(results: Results) -> None:
    for level in LEVELS:
        await _level(results, level)


async def _level(results: Results, level: str) -> None:
    count = size(300, 10)
    section(f"SQLite checkpoints, synchronous={level}: {count} creates per round")
    with tempfile.TemporaryDirectory(prefix="eventlog-bench-") as directory:
        root = Path(directory)
        raw = sqlite3.connect(root / "raw.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute(f"PRAGMA synchronous = {level}")
        raw.execute("CREATE TABLE raw_checkpoints (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, state BLOB NOT NULL)")
        payload = str(state(0)).encode()
        run_id = uuid.uuid4()

        async def raw_insert(i: int) -> None:
            raw.execute("INSERT INTO raw_checkpoints (tenant_id, session_id, state) "
                        "VALUES (?, ?, ?)", ("t", f"s{i // PER_THREAD}", payload))

        async with open_log(f"sqlite:///{root / 'log.db'}", synchronous=level) as log:
            async def create(i: int) -> None:
                await log.checkpoints.create(CheckpointRecord(
                    tenant_id="t", session_id=f"s{i // PER_THREAD}", run_id=run_id, step=i,
                    state=state(i)))

            contestants: dict[str, Any] = {"raw_sqlite3": raw_insert, "create": create}
            manager = await _langgraph(root / "langgraph.db", level, contestants)
            figures = await take_turns(count, **contestants)
            full = level == "FULL"
            results.compare(f"SQLite checkpoint create, synchronous={level}", "create",
                            "raw_sqlite3", figures, goal="≥ 0.7" if full else "(info)",
                            at_least=0.7 if full else None)
            if manager is not None:
                results.compare(
                    f"SQLite checkpoint create vs LangGraph SQLite aput, synchronous={level}",
                    "create", "langgraph_aput", figures, goal="≥ 1.0", at_least=1.0)
            await _concurrent(results, root, level, log, contestants.get("langgraph_aput"))
            if manager is not None:
                await manager.__aexit__(None, None, None)
        raw.close()


async def _concurrent(results: Results, root: Path, level: str, log: EventLog,
                      langgraph: Any) -> None:
    """8 writers at once, each on its own session, rounds interleaved."""
    count = size(PER_THREAD, 5)  # at most PER_THREAD: each LangGraph writer puts into one thread
    section(f"SQLite, synchronous={level}, {WRITERS} concurrent writers × {count} calls "
            "per round")
    payload = str(state(0)).encode()
    run_id = uuid.uuid4()

    def raw_thread(writer: int, calls: int) -> None:
        connection = sqlite3.connect(root / "raw.db", isolation_level=None, timeout=60)
        connection.execute(f"PRAGMA synchronous = {level}")
        for _ in range(calls):
            connection.execute("INSERT INTO raw_checkpoints (tenant_id, session_id, state) "
                               "VALUES (?, ?, ?)", ("t", f"w{writer}", payload))
        connection.close()

    async def creates(session: str, steps: range) -> None:
        for step in steps:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=session, run_id=run_id, step=step,
                state=state(step)))

    async def puts(thread: int, steps: range) -> None:  # its own LangGraph thread
        for step in steps:
            await langgraph((10_000 + thread) * PER_THREAD + step)

    def writers(number: int, steps: range) -> dict[str, Callable[[], Awaitable[object]]]:
        """Each contestant's 8 writers making the calls ``steps`` of round ``number``."""
        turns: dict[str, Callable[[], Awaitable[object]]] = {
            "raw_sqlite3_8_threads": lambda: asyncio.gather(*(
                asyncio.to_thread(raw_thread, n, len(steps)) for n in range(WRITERS))),
            "create_8_tasks": lambda: asyncio.gather(*(
                creates(f"c{number}-{n}", steps) for n in range(WRITERS))),
        }
        if langgraph is not None:
            turns["langgraph_aput_8_tasks"] = lambda: asyncio.gather(*(
                puts(number * WRITERS + n, steps) for n in range(WRITERS)))
        return turns

    per_turn = max(1, BLOCK // WRITERS) * 2
    figures: dict[str, list[float]] = {name: [] for name in writers(0, range(0))}
    for number in range(rounds()):
        spent = dict.fromkeys(figures, 0.0)
        for first in range(0, count, per_turn):
            for name, turn in writers(number, range(first, min(first + per_turn, count))
                                      ).items():
                began = time.perf_counter()
                await turn()
                spent[name] += time.perf_counter() - began
        for name in figures:
            figures[name].append(WRITERS * count / spent[name])
    results.compare(f"SQLite, synchronous={level}, {WRITERS} concurrent creates, tasks on "
                    "one log", "create_8_tasks", "raw_sqlite3_8_threads", figures,
                    goal="(info)")
    if langgraph is not None:
        results.compare(f"SQLite, synchronous={level}, {WRITERS} concurrent creates vs "
                        "LangGraph SQLite aput", "create_8_tasks", "langgraph_aput_8_tasks",
                        figures, goal="≥ 1.3", at_least=1.3)


async def _langgraph(path: Path, level: str, contestants: dict[str, Any]) -> Any:
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:
        print("  (langgraph-checkpoint-sqlite not installed: pip install -e '.[bench]')")
        return None
    manager = AsyncSqliteSaver.from_conn_string(str(path))
    saver = await manager.__aenter__()
    await saver.setup()
    found = []
    for pragma in ("journal_mode", "synchronous"):
        cursor = await saver.conn.execute(f"PRAGMA {pragma}")
        row = await cursor.fetchone()
        found.append(f"{pragma}={None if row is None else row[0]}")
    await saver.conn.execute(f"PRAGMA synchronous = {level}")
    print(f"  (LangGraph's connection after setup: {', '.join(found)} "
          f"(synchronous 2 is FULL); set to synchronous={level})")
    contestants["langgraph_aput"] = ChatThreads(saver).aput
    return manager
