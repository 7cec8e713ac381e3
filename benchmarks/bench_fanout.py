"""A super-step's parallel writes: LangGraph runs a step's tasks at once and each stores
its writes (``aput_writes``) to the thread's new checkpoint at about the same moment.

Per step, each contestant puts a checkpoint, then `WIDTH` tasks call ``aput_writes``
concurrently (``asyncio.gather``, as LangGraph's runner does), each with a ~200-byte
message and a counter; the figure is those gathers per second (the put is not timed).
Ours (`AsyncEventlogSaver`, whose waiting writes go in one append:
`eventlog.checkpoints.write_batches`) beside LangGraph's ``AsyncPostgresSaver`` and
``AsyncSqliteSaver``, contestants taking turns within each of `rounds()` rounds; the
ratio is ours ÷ LangGraph's, medians over rounds (goal ≥ 1.0).
Run: ``python -m benchmarks --only fanout``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks.bench_langgraph import checkpoint
from benchmarks.common import PG_URL, Results, rounds, scratch_schema, section, size
from eventlog.adapters.langgraph import AsyncEventlogSaver

WIDTH = 5
"""Tasks writing at once in each step."""


def stepper(saver: Any, prefix: str) -> Callable[[int], Awaitable[float]]:
    """One step of a graph on ``saver``: its checkpoint put, then `WIDTH` concurrent
    ``aput_writes``; the seconds the writes took."""
    async def step(number: int) -> float:
        config = {"configurable": {"thread_id": f"{prefix}-{number // 50}",
                                   "checkpoint_ns": ""}}
        made, versions = checkpoint(number % 50, changed=True)
        stored = await saver.aput(config, made, {"source": "loop", "step": number}, versions)
        started = time.perf_counter()
        await asyncio.gather(*[
            saver.aput_writes(stored, [("messages", {"role": "ai", "content": "w" * 200}),
                                       ("count", task)], str(uuid.uuid4()))
            for task in range(WIDTH)])
        return time.perf_counter() - started
    return step


async def compare(results: Results, backend: str, ours: Any, theirs: Any, name: str) -> None:
    steps = size(100, 10)
    figures: dict[str, list[float]] = {"ours": [], name: []}
    contestants = {"ours": stepper(ours, "ours"), name: stepper(theirs, "theirs")}
    for number in range(rounds()):
        for label, step in contestants.items():
            spent = 0.0
            for index in range(steps):
                spent += await step(number * steps + index)
            figures[label].append(steps / spent)
    results.compare(f"{backend}: {WIDTH} concurrent aput_writes a step, steps/s", "ours", name,
                    figures, unit="steps/s", goal=">= 1.0", at_least=1.0)


async def run(results: Results) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    section(f"a super-step's parallel writes: {WIDTH} tasks' aput_writes at once")
    with tempfile.TemporaryDirectory() as directory:
        async with AsyncExitStack() as stack:
            ours = await stack.enter_async_context(AsyncEventlogSaver.from_conn_string(
                f"sqlite:///{Path(directory) / 'ours.db'}", tenant_id="bench"))
            theirs = await stack.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(Path(directory) / "theirs.db")))
            await theirs.setup()
            await compare(results, "SQLite", ours, theirs, "LangGraph AsyncSqliteSaver")
    async with AsyncExitStack() as stack:
        schema = await stack.enter_async_context(scratch_schema())
        ours = await stack.enter_async_context(AsyncEventlogSaver.from_conn_string(
            PG_URL, tenant_id="bench", schema=schema))
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'CREATE SCHEMA "{schema}_langgraph"')
        await connection.close()
        postgres = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(
            PG_URL + f"?options=-csearch_path%3D{schema}_langgraph"))
        await postgres.setup()
        await compare(results, "PostgreSQL", ours, postgres, "LangGraph AsyncPostgresSaver")
