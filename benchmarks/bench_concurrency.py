"""Eight concurrent writers on PostgreSQL, each on its own session, next to raw asyncpg.

- 8 tasks on ONE log (its pool opens 8 connections) creating checkpoints, next to 8 tasks
  each inserting the same bytes on a raw asyncpg connection of its own;
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

from benchmarks.bench_checkpoints import STATE
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
    payload = str(STATE).encode()
    for _ in range(count):
        await connection.execute(insert, "t", writer, payload)


async def _create_calls(log: EventLog, writer: str, count: int) -> None:
    run_id = uuid.uuid4()
    for step in range(count):
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=writer, run_id=run_id, step=step,
            state={**STATE, "step": step}))


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
    for connection in connections:
        await connection.close()
    results.compare(f"{writers()} concurrent creates, tasks on one log", "create_8_tasks",
                    "raw_8_connections", figures, goal="≥ 0.8", at_least=0.8)


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
