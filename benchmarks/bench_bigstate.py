"""Big states (issue 33 §2): one value of 100 KB, 1 MB and 10 MB written and read back,
on SQLite and PostgreSQL, by our LangGraph saver (``aput`` of a checkpoint whose one
channel holds the value, ``aget_tuple``), by LangGraph's own ``AsyncSqliteSaver`` and
``AsyncPostgresSaver`` (the same calls), and by the session store (``create`` and
``read`` of a bytes state), each in a process of its own (`benchmarks.bigstate_child`).

Each round is a fresh process per saver (the savers interleaved; each saver's store is
kept from round to round), after a warm-up call with a small value. Figures: throughput
(MB/s of value written or read) and peak memory of one call as a multiple of the value,
both the Python heap (tracemalloc) and the growth of the resident set (``VmHWM`` reset
before the call). The values are random bytes (incompressible).
Caveats: a round is one call, so at 100 KB the throughput is mostly the call's fixed cost;
the SQLite files are on the temporary directory's disk; PostgreSQL is the shared server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks.common import PG_URL, Results, quick, rounds, section

SIZES = (100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (10_000,)
SAVERS = ("threads", "langgraph", "checkpoints")
NAMES = {"threads": "ours (LangGraph saver)", "langgraph": "LangGraph's saver",
         "checkpoints": "ours (session store)"}
ROOT = Path(__file__).resolve().parent.parent


async def child(kind: str, url: str, size: int, count: int) -> dict[str, Any]:
    """The rounds of one saver, run in a fresh interpreter."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "benchmarks.bigstate_child", "rounds", kind, url, str(size),
        str(count), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"bigstate child {kind} {url}: {err.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    return result


async def backend(results: Results, name: str, urls: dict[str, str]) -> None:
    """Every size on one backend; ``urls`` maps each saver to a fresh store of its own."""
    for size in QUICK_SIZES if quick() else SIZES:
        # One fresh process per round and saver, the savers interleaved: a process's
        # second big call reuses the pages its first one freed, so only a first call's
        # resident-set growth says what a call costs.
        # (--quick: one process per saver, its rounds in it.)
        found: dict[str, dict[str, list[float]]] = {kind: {} for kind in SAVERS}
        for _ in range(1 if quick() else rounds()):
            for kind in SAVERS:
                measured = await child(kind, urls[kind].format(size=size), size,
                                       rounds() if quick() else 1)
                for key, figures in measured.items():
                    if isinstance(figures, list):
                        found[kind].setdefault(key, []).extend(figures)
        label = f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size // 1000} KB"
        print(f"\n  {name}, one value of {label}:")
        print(f"    {'':<26}{'write MB/s':>11}{'read MB/s':>11}{'write heap':>12}"
              f"{'write RSS':>11}{'read heap':>11}{'read RSS':>10}")
        figures: dict[str, list[float]] = {}
        for kind, measured in found.items():
            for op in ("write", "read"):
                figures[f"{kind} {op} MB/s"] = [size / 1e6 / s for s in measured[f"{op}_seconds"]]
                for memory in ("traced", "rss"):
                    # 1 + the multiple: a ratio of two multiples near zero means nothing
                    figures[f"{kind} {op} {memory}"] = [
                        1 + figure / size for figure in measured[f"{op}_{memory}"]]
            medians = [sorted(figures[key])[len(figures[key]) // 2] for key in (
                f"{kind} write MB/s", f"{kind} read MB/s", f"{kind} write traced",
                f"{kind} write rss", f"{kind} read traced", f"{kind} read rss")]
            print(f"    {NAMES[kind]:<26}{medians[0]:>11.1f}{medians[1]:>11.1f}"
                  + "".join(f"{value - 1:>10.2f}× " for value in medians[2:]))
        for op in ("write", "read"):
            results.compare(f"big state {label} {name}: {op} MB/s, our saver ÷ LangGraph's",
                            f"threads {op} MB/s", f"langgraph {op} MB/s", figures,
                            unit="MB/s", goal="informational")
            results.compare(f"big state {label} {name}: {op} peak RSS (1 + ×value), ours ÷ "
                            "LangGraph's", f"threads {op} rss", f"langgraph {op} rss", figures,
                            unit="1+×", **_memory_goal(size))


def _memory_goal(size: int) -> dict[str, Any]:
    """No more memory than LangGraph's saver (within 1.2x) from 1 MB on; below, a few
    pages of fixed costs (prepared statements, the page cache) outweigh the value."""
    if size < 1_000_000:
        return {"goal": "informational (fixed costs dominate)"}
    return {"goal": "≤ 1.2", "at_most": 1.2}


async def run(results: Results) -> None:
    section("big states: 100 KB, 1 MB, 10 MB written and read (memory as a multiple of "
            "the value)")
    with tempfile.TemporaryDirectory(prefix="eventlog-bigstate-") as directory:
        await backend(results, "SQLite", {
            kind: f"sqlite:///{Path(directory) / kind}-{{size}}.db" for kind in SAVERS})
    schemas = {kind: f"bench_big_{uuid.uuid4().hex[:8]}" for kind in SAVERS}
    try:
        await backend(results, "PostgreSQL", {
            kind: f"{PG_URL}?{schema}_{{size}}" for kind, schema in schemas.items()})
    finally:
        connection = await asyncpg.connect(PG_URL)
        try:
            for schema in schemas.values():
                for size in (*SIZES, *QUICK_SIZES):
                    await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}_{size}" CASCADE')
        finally:
            await connection.close()
