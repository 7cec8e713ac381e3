"""Adopting LangGraph's AsyncPostgresSaver threads into the log, beside a plain ``alist``.

The source: LangGraph's own AsyncPostgresSaver in a schema of its own, filled with 10,000
checkpoints (100 threads of 100, each checkpoint a changed ~2 KB channel beside an
unchanged one, every fourth with a pending write). Each round times, one after the other,
``alist(None)`` of the whole source (every checkpoint loaded, what any reader pays) and
`adopt_langgraph` of the same source into a fresh tenant of a log on the same server (one
listing of the whole source, kept, then every checkpoint appended with its writes, 100
per append). Figures are
checkpoints/s, the median of the rounds; the ratio is adoption over the plain listing.
Caveats: client and both databases share the machine's cores, fsync on.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from benchmarks.common import PG_URL, Results, rounds, scratch_schema, section, size
from eventlog import open_log
from eventlog.adapters.langgraph_adoption import adopt_langgraph

BIG = {"messages": ["x" * 100] * 18}  # ~2 KB


async def _fill(saver: Any, threads: int, per_thread: int) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    for number in range(threads):
        parent: str | None = None
        for step in range(per_thread):
            made: dict[str, Any] = dict(empty_checkpoint())
            made["id"] = f"1ef00000-0000-6000-8000-{number:06d}{step:06d}"
            made["channel_values"] = {"history": BIG, "state": {**BIG, "step": step}}
            made["channel_versions"] = {"history": 1, "state": step + 1}
            configurable: dict[str, Any] = {"thread_id": f"t-{number}", "checkpoint_ns": ""}
            if parent is not None:
                configurable["checkpoint_id"] = parent
            versions = {"state": step + 1, **({"history": 1} if step == 0 else {})}
            stored = await saver.aput({"configurable": configurable}, made,
                                      {"source": "loop", "step": step, "parents": {}}, versions)
            if step % 4 == 0:
                await saver.aput_writes(stored, [("state", {"step": step})], f"task-{step}")
            parent = made["id"]


async def _listed(saver: Any) -> int:
    return len([item async for item in saver.alist(None)])


async def run(results: Results) -> None:
    """Fill the source once, then time rounds of listing and adopting it."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    threads, per_thread = size(100, 4), size(100, 5)
    total = threads * per_thread
    section(f"adopt: {total:,} checkpoints from LangGraph's AsyncPostgresSaver")
    async with scratch_schema() as schema:
        source_schema = f"{schema}_langgraph"
        connection = await asyncpg.connect(PG_URL)
        try:
            await connection.execute(f'CREATE SCHEMA "{source_schema}"')
        finally:
            await connection.close()
        async with AsyncPostgresSaver.from_conn_string(
            PG_URL + f"?options=-csearch_path%3D{source_schema}"
        ) as source, open_log(PG_URL, schema=schema) as log:
            await source.setup()
            started = time.perf_counter()
            await _fill(source, threads, per_thread)
            print(f"  filled in {time.perf_counter() - started:.0f} s")
            listing, adopting = "LangGraph alist(None), all", "adopt_langgraph"
            figures: dict[str, list[float]] = {listing: [], adopting: []}
            for number in range(rounds() if total < 1000 else 3):
                started = time.perf_counter()
                assert total == await _listed(source)
                figures[listing].append(total / (time.perf_counter() - started))
                started = time.perf_counter()
                report = await adopt_langgraph(log, source, tenant_id=f"bench-{number}")
                figures[adopting].append(total / (time.perf_counter() - started))
                assert total == report.checkpoints
            results.compare(
                f"adopt {total:,} checkpoints vs alist of the same source", adopting,
                listing, figures, unit="checkpoints/s",
                goal="measured: one listing of the source, then every checkpoint appended",
            )
