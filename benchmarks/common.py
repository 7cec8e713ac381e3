"""Shared helpers for the benchmarks: sizes, interleaved rounds, ratios, a scratch schema.

Every figure is a ratio to a baseline measured in the same run, as the median of at least
three interleaved rounds (A B A B …), so drift in the machine's load hits every contestant
alike. ``EVENTLOG_BENCH_QUICK=1`` (or ``--quick``) shrinks every size so the whole harness
runs in seconds; its ratios then mean nothing, it only proves the harness runs.
"""

from __future__ import annotations

import logging
import os
import platform
import random
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog

PG_URL = os.environ.get("EVENTLOG_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def quick() -> bool:
    """Whether the harness runs on tiny sizes (a smoke test, not a measurement)."""
    return os.environ.get("EVENTLOG_BENCH_QUICK", "") not in ("", "0")


def size(full: int, small: int) -> int:
    """``full`` normally, ``small`` in quick mode."""
    return small if quick() else full


def rounds() -> int:
    """Interleaved rounds per comparison (never fewer than 3)."""
    return max(3, int(os.environ.get("BENCH_ROUNDS", "5" if not quick() else "3")))


def quiet_logs() -> None:
    """Filter the library's logs to WARNING, as a production host would."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.basicConfig(level=logging.WARNING)


async def rate(operation: Callable[[int], Awaitable[object]], count: int, base: int = 0
               ) -> float:
    """Calls per second of ``operation(base + i)`` for i in range(count), one after another."""
    started = time.perf_counter()
    for index in range(count):
        await operation(base + index)
    return count / (time.perf_counter() - started)


async def interleave(
    count: int, *, shuffled: bool = False, times: int | None = None,
    **contestants: Callable[[int], Awaitable[object]],
) -> dict[str, list[float]]:
    """Calls/s of each contestant in every one of `rounds()` (or ``times``) interleaved
    rounds. ``shuffled`` runs each round's contestants in a random order (seeded, so a
    rerun takes the same orders): where the differences measured are small beside the
    machine's drift, a fixed order lets whatever the first (or last) of a round pays show
    up as a difference between the contestants."""
    results: dict[str, list[float]] = {name: [] for name in contestants}
    order = random.Random(0)
    offset = 0
    for _ in range(times or rounds()):
        names = list(contestants)
        if shuffled:
            order.shuffle(names)
        for name in names:
            results[name].append(await rate(contestants[name], count, offset))
        offset += count
    return results


async def latencies(operation: Callable[[int], Awaitable[object]], count: int) -> list[float]:
    """Seconds per call of ``operation(i)``, one after another."""
    times = []
    for index in range(count):
        started = time.perf_counter()
        await operation(index)
        times.append(time.perf_counter() - started)
    return times


def percentile(values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def alternate(
    rounds: int, count: int, **contestants: Callable[[int], Awaitable[object]]
) -> dict[str, float]:
    """Median calls/s of each contestant over ``rounds`` interleaved rounds (for the
    scripts that print their own report, like `benchmarks.bench_langgraph`)."""
    results: dict[str, list[float]] = {name: [] for name in contestants}
    for number in range(rounds):
        for name, operation in contestants.items():
            results[name].append(await rate(operation, count, number * count))
    return {name: statistics.median(values) for name, values in results.items()}


def report(title: str, baseline: str, figures: dict[str, float], unit: str = "ops/s") -> None:
    """Print figures next to the baseline, as ratios."""
    print(f"\n{title}")
    base = figures[baseline]
    for name, value in figures.items():
        print(f"  {name:<44} {value:>10.0f} {unit}   {value / base:5.2f}× {baseline}")


@dataclass
class Ratio:
    """One figure next to its baseline."""

    name: str
    baseline: str
    ratio: float
    medians: dict[str, float]
    rounds: dict[str, list[float]]
    unit: str
    goal: str
    met: bool | None

    def line(self) -> str:
        verdict = "" if self.met is None else ("  ok" if self.met else "  MISSED")
        return (f"  {self.name:<58} {self.ratio:7.2f}×  vs {self.baseline}"
                f"   (goal {self.goal}){verdict}")


@dataclass
class Results:
    """Every ratio of the run, printed as they come and written as JSON at the end."""

    ratios: list[Ratio] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def compare(
        self, name: str, ours: str, baseline: str, figures: dict[str, list[float]], *,
        unit: str = "ops/s", goal: str = "", at_least: float | None = None,
        at_most: float | None = None,
    ) -> Ratio:
        """Record median(ours) / median(baseline) over the interleaved rounds."""
        medians = {key: statistics.median(figures[key]) for key in (ours, baseline)}
        value = medians[ours] / medians[baseline]
        met = None
        if at_least is not None:
            met = value >= at_least
        elif at_most is not None:
            met = value <= at_most
        ratio = Ratio(name, baseline, value, medians,
                      {key: figures[key] for key in (ours, baseline)}, unit, goal, met)
        self.ratios.append(ratio)
        print(f"    {ours:<44} {medians[ours]:>12.1f} {unit}")
        print(f"    {baseline:<44} {medians[baseline]:>12.1f} {unit}")
        print(ratio.line())
        return ratio

    def summary(self) -> None:
        print(f"\nsummary ({machine()})")
        for ratio in self.ratios:
            print(ratio.line())

    def as_json(self) -> list[dict[str, Any]]:
        return [
            {"name": r.name, "baseline": r.baseline, "ratio": r.ratio, "medians": r.medians,
             "rounds": r.rounds, "unit": r.unit, "goal": r.goal, "met": r.met}
            for r in self.ratios
        ]


def section(title: str) -> None:
    print(f"\n== {title}")


@asynccontextmanager
async def scratch_schema() -> AsyncIterator[str]:
    """A fresh PostgreSQL schema name, the schema dropped afterwards."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    try:
        yield schema
    finally:
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}_langgraph" CASCADE')
        await connection.close()


def machine() -> str:
    """One line describing where the numbers came from."""
    return (
        f"{platform.node()} · {os.cpu_count()} cores · Python {platform.python_version()} · "
        f"{PG_URL.rsplit('@', 1)[-1]}"
    )
