"""Thread reads on PostgreSQL with statistics and without (issue 41, "Reads regressed").

PostgreSQL plans a read by its tables' statistics; a fresh deployment, a bulk import, or
a server whose autovacuum is off or behind has none (this machine's runs with autovacuum
off). Three tenants of the adapter over one log, loaded as the very events ``aput``
appends (`benchmarks.bench_threads.load_ours`): a 10-step thread alone; a 10-step thread
with a 4,000-step thread written after it in the same tenant; a 1,000-step thread beside
600 checkpoints of 60 other threads (the adapter's share of `benchmarks.bench_langgraph`'s
tenant). LangGraph's ``AsyncPostgresSaver`` holds a 1,000-step thread (by ``aput``).

Each read (``aget_tuple`` latest, ``alist(limit=10)``, and ``alist`` of the whole
1,000-step thread) is timed first on tables never analyzed (autovacuum switched off for
them), then after ``ANALYZE``: the p50 of each round's calls, contestants taking turns
call by call, the median over rounds. Ratios: the 10-step thread beside the 4,000-step
one ÷ alone, the 4,000-step thread ÷ the 10-step one (goal ≤ 1.2 both), and ours ÷
LangGraph's at 1,000 steps as calls/s (issue 41's goals: ``aget_tuple`` ≥ 2, ``alist``
≥ 10). Quick mode: 10-, 40- and 100-step threads.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import asyncpg

from benchmarks.bench_threads import Read, load_ours, load_theirs, p50_rounds, reads
from benchmarks.common import PG_URL, Results, rounds, scratch_schema, section, size
from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver

_OURS = ("thread_checkpoints", "thread_channel_values", "thread_writes", "blobs",
         "events", "stream_heads")
_THEIRS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


async def run(results: Results) -> None:
    small, big, middle = size(10, 10), size(4000, 100), size(1000, 40)
    others = size(60, 3)
    calls = size(200, 5)
    section(f"Reads with statistics and without: a {small}-step thread alone and beside a "
            f"{big}-step one; {middle} steps beside LangGraph's; p50 of {calls} calls")
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]' to compare)")
        return
    async with scratch_schema() as schema, open_log(PG_URL, schema=schema) as log:
        theirs_schema = f"{schema}_langgraph"
        connection = await asyncpg.connect(PG_URL)
        try:
            await connection.execute(f'CREATE SCHEMA "{theirs_schema}"')
            async with AsyncPostgresSaver.from_conn_string(
                    PG_URL + f"?options=-csearch_path%3D{theirs_schema}") as theirs:
                await theirs.setup()
                for owner, tables in ((schema, _OURS), (theirs_schema, _THEIRS)):
                    for table in tables:
                        await connection.execute(f'ALTER TABLE "{owner}"."{table}" '
                                                 "SET (autovacuum_enabled = off)")
                ours = {name: AsyncEventlogSaver(log, tenant_id=name)
                        for name in ("alone", "beside", "middle", "solo")}
                middles = {
                    "alone": await load_ours(ours["alone"], "small", small),
                    "beside": await load_ours(ours["beside"], "small", small),
                    "middle": await load_ours(ours["middle"], "thread", middle),
                }
                middles["big"] = await load_ours(ours["beside"], "big", big)
                for n in range(others):
                    await load_ours(ours["middle"], f"other-{n}", 10)
                await load_ours(ours["solo"], "thread", middle)
                lg_middle = await load_theirs(theirs, "thread", middle)
                contestants = {
                    "alone": reads(ours["alone"], "small", middles["alone"]),
                    "beside": reads(ours["beside"], "small", middles["beside"]),
                    "big": reads(ours["beside"], "big", middles["big"]),
                    "ours": reads(ours["middle"], "thread", middles["middle"]),
                    "langgraph": reads(theirs, "thread", lg_middle),
                }
                for stats in ("never analyzed", "analyzed"):
                    if stats == "analyzed":
                        for owner, tables in ((schema, _OURS), (theirs_schema, _THEIRS)):
                            for table in tables:
                                await connection.execute(f'ANALYZE "{owner}"."{table}"')
                    for read in ("latest", "page"):
                        figures = await p50_rounds(calls, {
                            name: found[read] for name, found in contestants.items()})
                        _compare(results, f"{read}, {stats}", figures, small, big, middle)
                    whole = await p50_rounds(max(calls // 20, 3), {
                        "ours": _whole(ours["middle"], "thread"),
                        "langgraph": _whole(theirs, "thread")})
                    _versus(results, f"alist of all {middle}, {stats}", whole, middle, 10.0)
                fresh = await _fresh_reads(schema, theirs_schema, rounds())
                _versus(results, f"alist of all {middle}, analyzed, the thread alone in its "
                        "tenant, first read of a fresh connection", fresh, middle, 10.0)
        finally:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{theirs_schema}" CASCADE')
            await connection.close()


async def _fresh_reads(schema: str, theirs_schema: str, times: int) -> dict[str, list[float]]:
    """``alist`` of the whole middle thread as the first read of a new connection (a
    process started, a pool grown): PostgreSQL plans a prepared statement's first five
    executions for their parameters (custom plans; later ones may run a cached generic
    plan), which is when a costly estimate is JIT-compiled. The thread is the only one of
    its tenant ("solo"), as LangGraph's is of its schema: the estimate is its 1,000 rows
    (beside 60 others, "middle"'s is a sixtieth of them, below the threshold). Each saver
    opened afresh, taking turns; milliseconds."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    figures: dict[str, list[float]] = {"ours": [], "langgraph": []}
    for _ in range(times):
        async with open_log(PG_URL, schema=schema) as log:
            started = time.perf_counter()
            await _whole(AsyncEventlogSaver(log, tenant_id="solo"), "thread")(0)
            figures["ours"].append((time.perf_counter() - started) * 1000)
        async with AsyncPostgresSaver.from_conn_string(
                PG_URL + f"?options=-csearch_path%3D{theirs_schema}") as theirs:
            started = time.perf_counter()
            await _whole(theirs, "thread")(0)
            figures["langgraph"].append((time.perf_counter() - started) * 1000)
    return figures


def _whole(saver: Any, thread: str) -> Read:
    """``alist`` of every checkpoint of the thread."""
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

    async def listed(_i: int) -> None:
        found = [item async for item in saver.alist(config)]
        assert found

    return listed


def _compare(results: Results, read: str, figures: dict[str, list[float]], small: int,
             big: int, middle: int) -> None:
    results.compare(f"{read}: {small}-step thread beside a {big}-step one ÷ alone",
                    "beside", "alone", figures, unit="ms", goal="≤ 1.2", at_most=1.2)
    results.compare(f"{read}: {big}-step thread ÷ {small}-step", "big", "alone", figures,
                    unit="ms", goal="≤ 1.2", at_most=1.2)
    _versus(results, read, figures, middle, 2.0 if read.startswith("latest") else 1.5)


def _versus(results: Results, read: str, figures: dict[str, list[float]], middle: int,
            goal: float) -> None:
    rates = {name: [1000 / value for value in values] for name, values in figures.items()}
    results.compare(f"{read}, {middle} steps, vs LangGraph", "ours", "langgraph", rates,
                    unit="calls/s (1/p50)", goal=f"≥ {goal:g}", at_least=goal)
    print("    " + "  ".join(f"{name}: {statistics.median(values):.2f} ms"
                             for name, values in figures.items()))
