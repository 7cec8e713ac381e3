"""Eight concurrent writers on PostgreSQL, each on its own session, next to raw asyncpg.

- 8 tasks on ONE log (its pool opens 8 connections) creating checkpoints, next to 8 tasks
  each inserting the same bytes on a raw asyncpg connection of its own;
- 8 tasks putting checkpoints through LangGraph's ``AsyncPostgresSaver`` on a pool of its
  own with 8 connections (issue 25, goal 4: ours at least 1.3 times its rate), the chat shape of
  `benchmarks.bench_sqlite` (both channels changed, LangGraph's version strings), each
  task in its own thread; our creates store the same values as their state;
- 8 processes, each with its own log and its own raw connection, alternating the two in
  step (a barrier starts every phase), the rate being all calls over the wall time from
  the first start to the last finish.
Caveat: 8 writers and the server share 2 cores; the raw writers' ceiling is the server's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import uuid
from typing import Any

import asyncpg

from benchmarks.bench_sqlite import PER_THREAD, ChatThreads, state
from benchmarks.common import (
    PG_URL,
    Results,
    quiet_logs,
    rounds,
    scratch_schema,
    section,
    size,
)
from eventlog import CheckpointRecord, EventLog, open_log


def writers() -> int:
    return size(8, 2)


async def _table(schema: str) -> str:
    connection = await asyncpg.connect(PG_URL)
    table = f'"{schema}".raw_checkpoints'
    await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    await connection.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (id bigint GENERATED ALWAYS AS IDENTITY "
        "PRIMARY KEY, tenant_id text NOT NULL, session_id text NOT NULL, state bytea NOT NULL)")
    await connection.close()
    return f"INSERT INTO {table} (tenant_id, session_id, state) VALUES ($1, $2, $3)"


async def _raw_calls(connection: Any, insert: str, writer: str, count: int) -> None:
    payload = str(state(0)).encode()
    for _ in range(count):
        await connection.execute(insert, "t", writer, payload)


async def _create_calls(log: EventLog, writer: str, count: int) -> None:
    run_id = uuid.uuid4()
    for step in range(count):
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=writer, run_id=run_id, step=step, state=state(step)))


async def run(results: Results) -> None:
    count = size(200, 5)
    section(f"PostgreSQL, {writers()} concurrent writers × {count} calls per round")
    async with scratch_schema() as schema:
        insert = await _table(schema)
        await _tasks(results, schema, insert, count)
        await _processes(results, schema, insert, count)


async def _tasks(results: Results, schema: str, insert: str, count: int) -> None:
    connections = [await asyncpg.connect(PG_URL) for _ in range(writers())]
    figures: dict[str, list[float]] = {"raw_8_connections": [], "create_8_tasks": []}
    langgraph = await _langgraph_pool(schema)
    if langgraph is not None:
        figures["langgraph_aput_8_tasks"] = []
        puts = ChatThreads(langgraph[1]).aput
    async with open_log(PG_URL, schema=schema) as log:
        for number in range(rounds()):
            started = time.perf_counter()
            await asyncio.gather(*(_raw_calls(c, insert, f"r{number}-{n}", count)
                                   for n, c in enumerate(connections)))
            figures["raw_8_connections"].append(
                writers() * count / (time.perf_counter() - started))
            started = time.perf_counter()
            await asyncio.gather(*(_create_calls(log, f"t{number}-{n}", count)
                                   for n in range(writers())))
            figures["create_8_tasks"].append(
                writers() * count / (time.perf_counter() - started))
            if langgraph is not None:
                started = time.perf_counter()
                await asyncio.gather(*(_put_calls(puts, number * writers() + n, count)
                                       for n in range(writers())))
                figures["langgraph_aput_8_tasks"].append(
                    writers() * count / (time.perf_counter() - started))
    for connection in connections:
        await connection.close()
    results.compare(f"{writers()} concurrent creates, tasks on one log", "create_8_tasks",
                    "raw_8_connections", figures, goal="≥ 0.8", at_least=0.8)
    if langgraph is not None:
        await langgraph[0].close()
        results.compare(f"PostgreSQL, {writers()} concurrent creates vs LangGraph aput, "
                        f"its pool of {writers()}", "create_8_tasks",
                        "langgraph_aput_8_tasks", figures, goal="≥ 1.3", at_least=1.3)


async def _put_calls(puts: Any, thread: int, count: int) -> None:
    """``count`` puts into LangGraph thread number ``thread`` (one thread per task)."""
    for step in range(count):
        await puts(thread * PER_THREAD + step)


async def _langgraph_pool(schema: str) -> tuple[Any, Any] | None:
    """LangGraph's AsyncPostgresSaver on a pool of `writers()` connections (what its
    documentation suggests for concurrent graphs), in a schema of its own; (pool, saver)."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]' to compare)")
        return None
    schema = f"{schema}_langgraph"
    connection = await asyncpg.connect(PG_URL)
    await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    await connection.close()
    pool: Any = AsyncConnectionPool(
        PG_URL + f"?options=-csearch_path%3D{schema}", min_size=writers(),
        max_size=writers(), open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    await pool.open()
    saver = AsyncPostgresSaver(pool)
    await saver.setup()
    return pool, saver


async def _processes(results: Results, schema: str, insert: str, count: int) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers())
    queue = context.Queue()
    children = [
        context.Process(target=_child, args=(schema, insert, n, count, rounds(), barrier,
                                             queue))
        for n in range(writers())
    ]
    for child in children:
        child.start()
    reports = [queue.get(timeout=600) for _ in children]
    for child in children:
        child.join()
    figures: dict[str, list[float]] = {"raw_8_processes": [], "create_8_processes": []}
    for number in range(rounds()):
        for name in figures:
            spans = [report[number][name] for report in reports]
            wall = max(end for _, end in spans) - min(start for start, _ in spans)
            figures[name].append(writers() * count / wall)
    results.compare(f"{writers()} concurrent creates, processes", "create_8_processes",
                    "raw_8_processes", figures, goal="≥ 0.8", at_least=0.8)


def _child(schema: str, insert: str, number: int, count: int, round_count: int,
           barrier: Any, queue: Any) -> None:
    quiet_logs()
    queue.put(asyncio.run(_child_rounds(schema, insert, number, count, round_count,
                                        barrier)))


async def _child_rounds(schema: str, insert: str, number: int, count: int,
                        round_count: int, barrier: Any) -> list[dict[str, tuple[float, float]]]:
    connection = await asyncpg.connect(PG_URL)
    spans: list[dict[str, tuple[float, float]]] = []
    async with open_log(PG_URL, schema=schema, pool_size=1) as log:
        for round_number in range(round_count):
            span: dict[str, tuple[float, float]] = {}
            barrier.wait()
            started = time.time()
            await _raw_calls(connection, insert, f"pr{round_number}-{number}", count)
            span["raw_8_processes"] = (started, time.time())
            barrier.wait()
            started = time.time()
            await _create_calls(log, f"p{round_number}-{number}", count)
            span["create_8_processes"] = (started, time.time())
            spans.append(span)
    await connection.close()
    return spans
