"""Checkpoint store on PostgreSQL: create, latest, read and list, next to their baselines.

Measured in one process and one run:
- create of one checkpoint with ~2 KB state per call, next to raw asyncpg single-row
  autocommit INSERTs of the same bytes, and next to LangGraph's
  ``AsyncPostgresSaver.aput`` when ``langgraph-checkpoint-postgres`` is installed
  (``pip install -e ".[bench]"``);
- ``latest``, ``read`` and ``list`` on a session of 1,000 checkpoints (and ``list`` next
  to LangGraph's ``alist`` of the same thread);
- ``latest`` on sessions of 10, 100 and 1,000 checkpoints, to show it stays flat.
Caveats: one connection per contestant, client and server share 2 cores, fsync on.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

import asyncpg
import structlog

from benchmarks.common import PG_URL, alternate, machine, report, scratch_schema
from eventlog import CheckpointRecord, EventLog, open_log

COUNT = int(os.environ.get("BENCH_COUNT", "500"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
STATE = {"messages": ["x" * 100] * 18, "step": 1}  # ~2 KB as JSON


async def timed(operation: Any, repeat: int) -> float:
    """Calls per second of an argument-less coroutine function."""
    started = time.perf_counter()
    for _ in range(repeat):
        await operation()
    return repeat / (time.perf_counter() - started)


async def fill_session(log: EventLog, tenant: str, session: str, count: int) -> list[str]:
    """Create ``count`` checkpoints in one session; return their ids."""
    run_id = uuid.uuid4()
    ids = []
    for step in range(count):
        record = await log.checkpoints.create(CheckpointRecord(
            tenant_id=tenant, session_id=session, run_id=run_id, step=step,
            state={**STATE, "step": step},
        ))
        ids.append(record.checkpoint_id)
    return ids


async def langgraph_contestants(schema: str) -> tuple[Any, dict[str, Any]] | None:
    """LangGraph's saver in its own schema, or None when it is not installed."""
    try:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]' to compare)")
        return None
    # Its own schema: LangGraph's tables are named like ours ("checkpoints").
    schema = f"{schema}_langgraph"
    connection = await asyncpg.connect(PG_URL)
    await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    await connection.close()
    conninfo = PG_URL + f"?options=-csearch_path%3D{schema}"
    manager = AsyncPostgresSaver.from_conn_string(conninfo)
    saver = await manager.__aenter__()
    await saver.setup()

    async def aput(i: int) -> None:
        config = {"configurable": {"thread_id": f"lg-{i // 100}", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"state": {**STATE, "step": i}}
        checkpoint["channel_versions"] = {"state": i + 1}
        await saver.aput(config, checkpoint, {"step": i}, {"state": i + 1})

    return manager, {"saver": saver, "aput": aput}


async def aput_thread(saver: Any, thread_id: str, step: int) -> None:
    """One LangGraph checkpoint of ~2 KB state in ``thread_id``."""
    from langgraph.checkpoint.base import empty_checkpoint

    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"state": {**STATE, "step": step}}
    checkpoint["channel_versions"] = {"state": step + 1}
    await saver.aput(config, checkpoint, {"step": step}, {"state": step + 1})


async def _drain(iterator: Any) -> None:
    async for _ in iterator:
        pass


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    print(f"checkpoint benchmark: {COUNT} calls × {ROUNDS} rounds · {machine()}")
    async with scratch_schema() as schema, open_log(PG_URL, schema=schema) as log:
        raw = await asyncpg.connect(PG_URL)
        table = f'"{schema}".raw_checkpoints'
        await raw.execute(
            f"CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "tenant_id text NOT NULL, session_id text NOT NULL, state bytea NOT NULL)"
        )
        payload = str(STATE).encode()
        insert = f"INSERT INTO {table} (tenant_id, session_id, state) VALUES ($1, $2, $3)"
        run_id = uuid.uuid4()

        async def raw_insert(i: int) -> None:
            await raw.execute(insert, "t", f"s{i // 100}", payload)

        async def create(i: int) -> None:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{i // 100}", run_id=run_id, step=i,
                state={**STATE, "step": i},
            ))

        contestants: dict[str, Any] = {
            "raw asyncpg autocommit INSERT": raw_insert,
            "checkpoints.create (~2 KB state)": create,
        }
        langgraph = await langgraph_contestants(schema)
        if langgraph is not None:
            contestants["LangGraph AsyncPostgresSaver.aput"] = langgraph[1]["aput"]
        figures = await alternate(ROUNDS, COUNT, **contestants)
        report("create, one checkpoint per call", "raw asyncpg autocommit INSERT", figures)

        ids = await fill_session(log, "t", "big", 1000)
        reads = {
            "latest (1,000-checkpoint session)":
                await timed(lambda: log.checkpoints.latest("t", "big"), 300),
            "read (1,000-checkpoint session)":
                await timed(lambda: log.checkpoints.read("t", "big", ids[500]), 300),
            "list (1,000 records)":
                await timed(lambda: log.checkpoints.list("t", "big"), 20),
        }
        if langgraph is not None:
            saver, aput = langgraph[1]["saver"], langgraph[1]["aput"]
            for i in range(1000):
                await aput(10_000_000 + i)  # thread lg-100000 … lg-100009: 100 each
            for i in range(1000):
                await aput_thread(saver, "lg-big", i)
            small = {"configurable": {"thread_id": "lg-100000", "checkpoint_ns": ""}}
            big = {"configurable": {"thread_id": "lg-big", "checkpoint_ns": ""}}
            reads["LangGraph alist (1,000 checkpoints)"] = await timed(
                lambda: _drain(saver.alist(big)), 5
            )
            reads["LangGraph alist (100 checkpoints)"] = await timed(
                lambda: _drain(saver.alist(small)), 20
            )
            await fill_session(log, "t", "hundred", 100)
            reads["list (100 records)"] = await timed(
                lambda: log.checkpoints.list("t", "hundred"), 20
            )
        report("reads", "latest (1,000-checkpoint session)", reads, unit="calls/s")
        if langgraph is not None:
            for size, ours, theirs in (
                ("1,000", "list (1,000 records)", "LangGraph alist (1,000 checkpoints)"),
                ("100", "list (100 records)", "LangGraph alist (100 checkpoints)"),
            ):
                ratio = reads[ours] / reads[theirs]
                print(f"  list vs LangGraph alist, {size} checkpoints: {ratio:.1f}× faster")

        flat = {}
        for size in (10, 100, 1000):
            session = f"flat-{size}"
            await fill_session(log, "t", session, size) if size != 1000 else None
            name = session if size != 1000 else "big"
            flat[f"latest, session of {size}"] = await timed(
                lambda n=name: log.checkpoints.latest("t", n), 300
            )
        report("latest as sessions grow", "latest, session of 10", flat, unit="calls/s")
        if langgraph is not None:
            await langgraph[0].__aexit__(None, None, None)
            await raw.execute(f'DROP SCHEMA "{schema}_langgraph" CASCADE')
        await raw.close()


if __name__ == "__main__":
    asyncio.run(main())
