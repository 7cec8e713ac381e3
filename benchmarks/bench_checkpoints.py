"""Checkpoint store on PostgreSQL: create, latest and list, next to their baselines.

Measured in one process and one run:
- create of one checkpoint with ~2 KB state per call, next to raw asyncpg single-row
  autocommit INSERTs of the same bytes, and next to LangGraph's
  ``AsyncPostgresSaver.aput`` (``pip install -e ".[bench]"``);
- ``latest`` and ``list`` on a session of 1,000 checkpoints, next to LangGraph's
  ``aget_tuple`` and ``alist`` of a thread of 1,000 checkpoints.
Caveats: one connection per contestant, client and server share 2 cores, fsync on.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from benchmarks.common import PG_URL, Results, interleave, scratch_schema, section, size
from eventlog import CheckpointRecord, EventLog, open_log

STATE = {"messages": ["x" * 100] * 18, "step": 1}  # ~2 KB as JSON


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


async def langgraph_saver(schema: str) -> tuple[Any, Any] | None:
    """LangGraph's saver in a schema of its own (its tables are named like ours)."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]' to compare)")
        return None
    schema = f"{schema}_langgraph"
    connection = await asyncpg.connect(PG_URL)
    await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    await connection.close()
    manager = AsyncPostgresSaver.from_conn_string(PG_URL + f"?options=-csearch_path%3D{schema}")
    saver = await manager.__aenter__()
    await saver.setup()
    return manager, saver


async def aput(saver: Any, thread_id: str, step: int) -> None:
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


async def run(results: Results) -> None:
    count = size(500, 20)
    section(f"PostgreSQL checkpoints: {count} creates per round")
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

        contestants: dict[str, Any] = {"raw_insert": raw_insert, "create": create}
        langgraph = await langgraph_saver(schema)
        if langgraph is not None:
            saver = langgraph[1]
            contestants["langgraph_aput"] = lambda i: aput(saver, f"lg-{i // 100}", i)
        figures = await interleave(count, **contestants)
        results.compare("PostgreSQL checkpoint create (~2 KB state)", "create", "raw_insert",
                        figures, goal="≥ 0.8", at_least=0.8)
        if langgraph is not None:
            results.compare("PostgreSQL checkpoint create vs LangGraph", "create",
                            "langgraph_aput", figures, goal="≥ 1.6", at_least=1.6)
            await read_ratios(results, log, saver)
            await langgraph[0].__aexit__(None, None, None)
        await raw.close()


async def read_ratios(results: Results, log: EventLog, saver: Any) -> None:
    """latest and list of a 1,000-checkpoint session against LangGraph's thread of 1,000."""
    length = size(1000, 20)
    await fill_session(log, "t", "big", length)
    for step in range(length):
        await aput(saver, "lg-big", step)
    big = {"configurable": {"thread_id": "lg-big", "checkpoint_ns": ""}}
    calls = size(200, 5)
    latest = await interleave(
        calls, latest=lambda _i: log.checkpoints.latest("t", "big"),
        langgraph_aget_tuple=lambda _i: saver.aget_tuple(big),
    )
    results.compare(f"latest, {length}-checkpoint session, vs LangGraph aget_tuple",
                    "latest", "langgraph_aget_tuple", latest, unit="calls/s",
                    goal="≥ 1 (kept)", at_least=1.0)
    listing = await interleave(
        size(5, 2), list=lambda _i: log.checkpoints.list("t", "big"),
        langgraph_alist=lambda _i: _drain(saver.alist(big)),
    )
    results.compare(f"list of {length}, vs LangGraph alist", "list", "langgraph_alist",
                    listing, unit="calls/s", goal="≥ 1 (kept)", at_least=1.0)
