"""The LangGraph saver on PostgreSQL, beside LangGraph's own AsyncPostgresSaver.

Measured in one process and one run, each saver in a schema of its own on the same server:
- ``aput``: one checkpoint per call, two shapes: every channel changed (one ~2 KB channel
  rewritten each step) and an unchanged ~2 KB channel beside a small changed one (only the
  small one in ``new_versions``). Interleaved rounds (A B A B …), median calls/s;
- ``alist`` of a thread of 1,000 checkpoints, all of them, calls/s;
- ``aget_tuple`` of the latest checkpoint of that thread: median and p90 latency.
Caveats: one process, client and server share the machine's cores, fsync on; LangGraph
uses psycopg and its own pool, we use asyncpg and ours. Needs ``pip install -e ".[bench]"``.
Run: ``python -m benchmarks.bench_langgraph``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

import asyncpg

from benchmarks.common import PG_URL, alternate, machine, report, scratch_schema
from eventlog.adapters.langgraph import AsyncEventlogSaver

COUNT = int(os.environ.get("BENCH_COUNT", "300"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
BIG = {"messages": ["x" * 100] * 18}  # ~2 KB


def checkpoint(step: int, *, changed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A LangGraph checkpoint at ``step`` and its new_versions."""
    from langgraph.checkpoint.base import empty_checkpoint

    made: dict[str, Any] = dict(empty_checkpoint())
    if changed:
        made["channel_values"] = {"state": {**BIG, "step": step}}
        made["channel_versions"] = {"state": step + 1}
        return made, {"state": step + 1}
    made["channel_values"] = {"history": BIG, "step": step}
    made["channel_versions"] = {"history": 1, "step": step + 1}
    return made, {"step": step + 1} if step else {"history": 1, "step": 1}


def putter(saver: Any, prefix: str, *, changed: bool) -> Any:
    async def put(i: int) -> None:
        config = {"configurable": {"thread_id": f"{prefix}-{i // 100}", "checkpoint_ns": ""}}
        made, versions = checkpoint(i % 100, changed=changed)
        await saver.aput(config, made, {"source": "loop", "step": i}, versions)
    return put


async def latencies(operation: Any, repeat: int) -> tuple[float, float]:
    """Median and p90 latency of an argument-less coroutine function, in milliseconds."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        await operation()
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.9)]


async def drain(iterator: Any) -> int:
    return len([item async for item in iterator])


async def main() -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    print(f"LangGraph savers: {COUNT} calls × {ROUNDS} rounds · {machine()}")
    async with scratch_schema() as schema, AsyncEventlogSaver.from_conn_string(
        PG_URL, tenant_id="bench", schema=schema
    ) as ours:
        theirs_schema = f"{schema}_langgraph"
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'CREATE SCHEMA "{theirs_schema}"')
        async with AsyncPostgresSaver.from_conn_string(
            PG_URL + f"?options=-csearch_path%3D{theirs_schema}"
        ) as theirs:
            await theirs.setup()
            for changed, shape in ((True, "every channel changed"),
                                   (False, "unchanged 2 KB channel + small one")):
                figures = await alternate(
                    ROUNDS, COUNT,
                    **{"LangGraph AsyncPostgresSaver.aput": putter(theirs, f"lg{changed}",
                                                                   changed=changed),
                       "AsyncEventlogSaver.aput": putter(ours, f"ev{changed}", changed=changed)},
                )
                report(f"aput, {shape}", "LangGraph AsyncPostgresSaver.aput", figures)

            big = {"configurable": {"thread_id": "big", "checkpoint_ns": ""}}
            for saver in (theirs, ours):
                put = putter(saver, "unused", changed=True)
                for step in range(1000):
                    made, versions = checkpoint(step, changed=True)
                    await saver.aput(big, made, {"source": "loop", "step": step}, versions)
                del put
            assert 1000 == await drain(ours.alist(big)) == await drain(theirs.alist(big))
            lists = {}
            for name, saver in (("LangGraph alist (1,000)", theirs), ("alist (1,000)", ours)):
                started = time.perf_counter()
                for _ in range(5):
                    await drain(saver.alist(big))
                lists[name] = 5 / (time.perf_counter() - started)
            report("alist of a 1,000-checkpoint thread", "LangGraph alist (1,000)", lists,
                   unit="calls/s")

            print("\naget_tuple, latest of a 1,000-checkpoint thread (ms)")
            for name, saver in (("LangGraph", theirs), ("AsyncEventlogSaver", ours)):
                median, p90 = await latencies(lambda s=saver: s.aget_tuple(big), 300)
                print(f"  {name:<44} p50 {median:6.2f}   p90 {p90:6.2f}")
        await connection.execute(f'DROP SCHEMA "{theirs_schema}" CASCADE')
        await connection.close()


if __name__ == "__main__":
    asyncio.run(main())
