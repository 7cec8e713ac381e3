"""Whole-log jobs and reads as the log grows, on PostgreSQL.

- ``verify`` and the views ``rebuild`` of 100,000 and of 1,000,000 events, each in a
  child process of its own (`benchmarks.child`): events per second at 1 M against at
  100 k (linear: within 1.2x) and peak RSS at 1 M against at 100 k (flat: within 1.2x);
- growth: a log of 1,000,000 events over 10,000 sessions against one of 10,000 events
  over 100 sessions (100 checkpoints per session in both): the create ratio to raw
  INSERTs in each, and ``latest``, ``read`` and ``list`` p50 and p99 on random sessions.
Rounds of the 1 M jobs are expensive: ``BENCH_LARGE_ROUNDS`` (default 3) sets them.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import uuid
from typing import Any

import asyncpg

from benchmarks.bench_checkpoints import STATE
from benchmarks.common import (
    PG_URL,
    Results,
    interleave,
    latencies,
    percentile,
    quick,
    rounds,
    section,
    size,
)
from benchmarks.datasets import dataset
from eventlog import CheckpointRecord, EventLog, open_log


def large_rounds() -> int:
    return 3 if quick() else int(os.environ.get("BENCH_LARGE_ROUNDS", "3"))


async def run(results: Results) -> None:
    small = (size(1000, 10), size(100, 10))
    big = (size(10_000, 40), size(100, 10))
    section(f"whole-log jobs: {small[0] * small[1]:,} and {big[0] * big[1]:,} events")
    small_schema = await dataset("read", *small)
    big_schema = await dataset("big", *big)
    await whole_log_jobs(results, small_schema, big_schema)
    section("growth")
    growth_small = await dataset("growth_small", size(100, 4), small[1])
    await growth(results, growth_small, big_schema, small_sessions=size(100, 4),
                 big_sessions=big[0], per_session=big[1])


def _child(kind: str, schema: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.child", kind, schema],
        check=False, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmarks.child {kind} {schema} failed:\n{done.stderr[-2000:]}")
    output = done.stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


async def whole_log_jobs(results: Results, small: str, big: str) -> None:
    figures: dict[str, list[float]] = {}
    for _ in range(large_rounds()):
        for label, schema in (("100k", small), ("1M", big)):
            verified = await asyncio.to_thread(_child, "verify", schema)
            rebuilt = await asyncio.to_thread(_child, "rebuild", schema)
            for kind, job in (("verify", verified), ("rebuild", rebuilt)):
                print(f"    {kind} {label}: {verified['events']:,} events in "
                      f"{job['seconds']:.1f} s, peak RSS {job['peak_rss_kb'] / 1024:.0f} MB"
                      + ("" if verified["ok"] else "  NOT OK"))
                figures.setdefault(f"{kind}_{label}_events_per_s", []).append(
                    verified["events"] / job["seconds"])
                figures.setdefault(f"{kind}_{label}_peak_rss_kb", []).append(
                    job["peak_rss_kb"])
    for kind in ("verify", "rebuild"):
        results.compare(f"{kind}: events/s at 1M ÷ at 100k (linear)",
                        f"{kind}_1M_events_per_s", f"{kind}_100k_events_per_s", figures,
                        unit="events/s", goal="≥ 0.83", at_least=1 / 1.2)
        results.compare(f"{kind}: peak RSS at 1M ÷ at 100k (flat)",
                        f"{kind}_1M_peak_rss_kb", f"{kind}_100k_peak_rss_kb", figures,
                        unit="KB", goal="≤ 1.2", at_most=1.2)


async def growth(results: Results, small: str, big: str, *, small_sessions: int,
                 big_sessions: int, per_session: int) -> None:
    raw = await asyncpg.connect(PG_URL)
    await raw.execute('CREATE SCHEMA IF NOT EXISTS "bench_growth_raw"')
    await raw.execute('CREATE TABLE IF NOT EXISTS "bench_growth_raw".raw_checkpoints '
                      "(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                      "tenant_id text NOT NULL, session_id text NOT NULL, state bytea NOT NULL)")
    payload = str(STATE).encode()
    figures: dict[str, list[float]] = {}
    async with open_log(PG_URL, schema=small) as small_log, \
            open_log(PG_URL, schema=big) as big_log:
        logs = {"10k": (small_log, small_sessions), "1M": (big_log, big_sessions)}
        for label, (log, _) in logs.items():
            created = await interleave(
                size(200, 5),
                raw_insert=lambda i: raw.execute(
                    'INSERT INTO "bench_growth_raw".raw_checkpoints (tenant_id, session_id, '
                    "state) VALUES ($1, $2, $3)", "t", f"s{i // 100}", payload),
                create=_creator(log),
            )
            figures[f"create_ratio_{label}"] = [
                ours / base for ours, base in zip(created["create"], created["raw_insert"],
                                                  strict=True)]
        for _ in range(rounds()):
            for label, (log, sessions) in logs.items():
                for read, times in (await _reads(log, sessions, per_session)).items():
                    for name, fraction in (("p50", 0.5), ("p99", 0.99)):
                        figures.setdefault(f"{read}_{name}_{label}", []).append(
                            percentile(times, fraction) * 1000)
    await raw.execute('DROP SCHEMA "bench_growth_raw" CASCADE')
    await raw.close()
    results.compare("growth: create ratio at 1M ÷ at 10k events", "create_ratio_1M",
                    "create_ratio_10k", figures, unit="× raw", goal="≥ 0.83",
                    at_least=1 / 1.2)
    for read in ("latest", "read", "list"):
        for name in ("p50", "p99"):
            results.compare(f"growth: {read} {name} at 1M ÷ at 10k events",
                            f"{read}_{name}_1M", f"{read}_{name}_10k", figures, unit="ms",
                            goal="≤ 1.2", at_most=1.2)


def _creator(log: EventLog) -> Any:
    run_id = uuid.uuid4()
    prefix = uuid.uuid4().hex[:8]

    async def create(i: int) -> None:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=f"new-{prefix}-{i // 100}", run_id=run_id, step=i,
            state={**STATE, "step": i}))

    return create


async def _reads(log: EventLog, sessions: int, per_session: int) -> dict[str, list[float]]:
    calls = size(300, 10)
    picks = [(f"s{random.randrange(sessions)}", f"c{random.randrange(per_session)}")
             for _ in range(calls)]
    return {
        "latest": await latencies(
            lambda i: log.checkpoints.latest("t", picks[i][0]), calls),
        "read": await latencies(
            lambda i: log.checkpoints.read("t", picks[i][0], picks[i][1]), calls),
        "list": await latencies(
            lambda i: log.checkpoints.list("t", picks[i][0]), calls // 3),
    }
