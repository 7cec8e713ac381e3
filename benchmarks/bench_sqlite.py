"""SQLite checkpoint create, durable, next to LangGraph's SQLite saver and raw sqlite3.

All three write to files in one temporary directory, WAL, ``synchronous = FULL`` (every
commit fsyncs the WAL, so an acknowledged checkpoint survives a power cut):
- raw ``sqlite3`` autocommit INSERT of the same ~2 KB bytes, called inline (no thread);
- LangGraph's ``AsyncSqliteSaver.aput`` (aiosqlite), its connection set to the same level;
- our ``checkpoints.create`` on ``sqlite:///…``.
Then 8 writers at once, each on its own session: 8 tasks creating on one log (their
appends share commits: group commit), next to 8 threads each inserting on a raw
``sqlite3`` connection of its own, and 8 tasks putting through LangGraph's saver.
Caveat: the fsync cost is the disk's (here a virtual disk); ratios are what carry over.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.bench_checkpoints import STATE
from benchmarks.common import Results, interleave, rounds, section, size
from eventlog import CheckpointRecord, open_log

SYNCHRONOUS = "FULL"


async def run(results: Results) -> None:
    count = size(300, 10)
    section(f"SQLite checkpoints, synchronous={SYNCHRONOUS}: {count} creates per round")
    with tempfile.TemporaryDirectory(prefix="eventlog-bench-") as directory:
        root = Path(directory)
        raw = sqlite3.connect(root / "raw.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
        raw.execute("CREATE TABLE raw_checkpoints (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, state BLOB NOT NULL)")
        payload = str(STATE).encode()
        run_id = uuid.uuid4()

        async def raw_insert(i: int) -> None:
            raw.execute("INSERT INTO raw_checkpoints (tenant_id, session_id, state) "
                        "VALUES (?, ?, ?)", ("t", f"s{i // 100}", payload))

        async with open_log(f"sqlite:///{root / 'log.db'}") as log:
            async def create(i: int) -> None:
                await log.checkpoints.create(CheckpointRecord(
                    tenant_id="t", session_id=f"s{i // 100}", run_id=run_id, step=i,
                    state={**STATE, "step": i},
                ))

            contestants: dict[str, Any] = {"raw_sqlite3": raw_insert, "create": create}
            manager = await _langgraph(root / "langgraph.db", contestants)
            figures = await interleave(count, **contestants)
            results.compare(f"SQLite checkpoint create, synchronous={SYNCHRONOUS}", "create",
                            "raw_sqlite3", figures, goal="≥ 0.7", at_least=0.7)
            if manager is not None:
                results.compare("SQLite checkpoint create vs LangGraph SQLite aput", "create",
                                "langgraph_aput", figures, goal="≥ 1.6", at_least=1.6)
            await _concurrent(results, root, log, contestants.get("langgraph_aput"))
            if manager is not None:
                await manager.__aexit__(None, None, None)
        raw.close()


WRITERS = 8


async def _concurrent(results: Results, root: Path, log: Any, langgraph: Any) -> None:
    """8 writers at once, each on its own session, rounds interleaved."""
    count = size(100, 5)  # at most 100: LangGraph's writer puts into one thread
    section(f"SQLite, {WRITERS} concurrent writers × {count} calls per round")
    payload = str(STATE).encode()
    run_id = uuid.uuid4()

    def raw_thread(writer: int) -> None:
        connection = sqlite3.connect(root / "raw.db", isolation_level=None, timeout=60)
        connection.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
        for _ in range(count):
            connection.execute("INSERT INTO raw_checkpoints (tenant_id, session_id, state) "
                               "VALUES (?, ?, ?)", ("t", f"w{writer}", payload))
        connection.close()

    async def creates(session: str) -> None:
        for step in range(count):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=session, run_id=run_id, step=step,
                state={**STATE, "step": step}))

    async def puts(thread: int) -> None:  # LangGraph's thread is the call number // 100
        for step in range(min(count, 100)):
            await langgraph((10_000 + thread) * 100 + step)

    figures: dict[str, list[float]] = {"raw_sqlite3_8_threads": [], "create_8_tasks": []}
    if langgraph is not None:
        figures["langgraph_aput_8_tasks"] = []
    for number in range(rounds()):
        started = time.perf_counter()
        await asyncio.gather(*(asyncio.to_thread(raw_thread, n) for n in range(WRITERS)))
        figures["raw_sqlite3_8_threads"].append(WRITERS * count / (time.perf_counter() - started))
        started = time.perf_counter()
        await asyncio.gather(*(creates(f"c{number}-{n}") for n in range(WRITERS)))
        figures["create_8_tasks"].append(WRITERS * count / (time.perf_counter() - started))
        if langgraph is not None:
            started = time.perf_counter()
            await asyncio.gather(*(puts(number * WRITERS + n) for n in range(WRITERS)))
            figures["langgraph_aput_8_tasks"].append(
                WRITERS * count / (time.perf_counter() - started))
    results.compare(f"SQLite, {WRITERS} concurrent creates, tasks on one log",
                    "create_8_tasks", "raw_sqlite3_8_threads", figures, goal="(info)")
    if langgraph is not None:
        results.compare(f"SQLite, {WRITERS} concurrent creates vs LangGraph SQLite aput",
                        "create_8_tasks", "langgraph_aput_8_tasks", figures, goal="(info)")


async def _langgraph(path: Path, contestants: dict[str, Any]) -> Any:
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:
        print("  (langgraph-checkpoint-sqlite not installed: pip install -e '.[bench]')")
        return None
    from benchmarks.bench_checkpoints import aput

    manager = AsyncSqliteSaver.from_conn_string(str(path))
    saver = await manager.__aenter__()
    await saver.setup()
    cursor = await saver.conn.execute("PRAGMA synchronous")
    level = (await cursor.fetchone())[0]
    await saver.conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS}")
    print(f"  (LangGraph's connection had synchronous={level}; set to {SYNCHRONOUS})")
    contestants["langgraph_aput"] = lambda i: aput(saver, f"lg-{i // 100}", i)
    return manager
