"""SQLite checkpoint create, durable, next to LangGraph's SQLite saver and raw sqlite3.

All three write to files in one temporary directory, WAL, ``synchronous = FULL`` (every
commit fsyncs the WAL, so an acknowledged checkpoint survives a power cut):
- raw ``sqlite3`` autocommit INSERT of the same ~2 KB bytes, called inline (no thread);
- LangGraph's ``AsyncSqliteSaver.aput`` (aiosqlite), its connection set to the same level;
- our ``checkpoints.create`` on ``sqlite:///…``.
Caveat: the fsync cost is the disk's (here a virtual disk); ratios are what carry over.
"""

from __future__ import annotations

import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks.bench_checkpoints import STATE
from benchmarks.common import Results, interleave, section, size
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
                await manager.__aexit__(None, None, None)
        raw.close()


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
