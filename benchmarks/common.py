"""Shared helpers for the benchmarks: timing rounds, a scratch PostgreSQL schema, printing."""

from __future__ import annotations

import os
import platform
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import asyncpg

PG_URL = os.environ.get("EVENTLOG_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


async def rate(operation: Callable[[int], Awaitable[object]], count: int) -> float:
    """Calls per second of ``operation(i)`` for i in range(count), run one after another."""
    started = time.perf_counter()
    for index in range(count):
        await operation(index)
    return count / (time.perf_counter() - started)


async def alternate(
    rounds: int, count: int, **contestants: Callable[[int], Awaitable[object]]
) -> dict[str, float]:
    """Median calls/s of each contestant over ``rounds`` interleaved rounds (A B A B …),
    so that drift in the machine's load hits every contestant alike."""
    results: dict[str, list[float]] = {name: [] for name in contestants}
    offset = 0
    for _ in range(rounds):
        for name, operation in contestants.items():
            base = offset
            results[name].append(await rate(lambda i, op=operation, b=base: op(b + i), count))
        offset += count
    return {name: statistics.median(values) for name, values in results.items()}


@asynccontextmanager
async def scratch_schema() -> AsyncIterator[str]:
    """A fresh PostgreSQL schema, dropped afterwards."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    try:
        yield schema
    finally:
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.close()


def machine() -> str:
    """One line describing where the numbers came from."""
    return (
        f"{platform.node()} · {os.cpu_count()} cores · Python {platform.python_version()} · "
        f"{PG_URL.rsplit('@', 1)[-1]}"
    )


def report(title: str, baseline: str, figures: dict[str, float], unit: str = "ops/s") -> None:
    """Print figures next to the baseline, as ratios."""
    print(f"\n{title}")
    base = figures[baseline]
    for name, value in figures.items():
        print(f"  {name:<44} {value:>10.0f} {unit}   {value / base:5.2f}× {baseline}")
