"""The soak: 8 processes of mixed traffic on PostgreSQL and on a SQLite file, then every
invariant checked on the log itself.

Each process (`tests.procs.soak_worker`) creates checkpoints, deletes sessions, creates
interrupt batches, races the others to claim them, starts effects, captures, finishes,
walks away from claims, runs cleanup and reconciles, for ``EVENTLOG_SOAK_SECONDS``
(default 60) per backend. Afterwards: one claim per generation and generations rising in
every batch, at most one dispatch marker per batch, every acknowledged checkpoint, claim
and effect in the log, `verify` clean, views equal to a rebuild, and each process's peak
resident memory in the last third of the run within 1.1x of its peak in the first third.
It prints operations per second and error counts. Run it with ``pytest -m soak``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog, open_log
from eventlog.events.checkpoints import CheckpointCreated
from eventlog.events.interrupts import BatchClaimed, EffectStarted
from projections import compare_views
from tests.conftest import BackendTarget
from tests.procs.settle import settle

pytestmark = pytest.mark.soak

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 8
SECONDS = float(os.environ.get("EVENTLOG_SOAK_SECONDS", "60"))


def run_workers(target: BackendTarget) -> list[dict[str, Any]]:
    """Run the soak processes to the end; every line they printed."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.procs.soak_worker", target.url, target.schema,
             f"w{number}", str(SECONDS), str(number)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
            stdout=subprocess.PIPE,
        )
        for number in range(PROCESSES)
    ]
    lines: list[dict[str, Any]] = []
    for process in processes:
        output, _ = process.communicate(timeout=SECONDS + 300)
        assert 0 == process.returncode, output[-3000:]
        lines.extend(json.loads(line) for line in output.splitlines())
    return lines


async def whole_log(log: EventLog) -> list[Any]:
    """Every event of the log, in log order."""
    events: list[Any] = []
    cursor = None
    while True:
        page = await log.read_all(after=cursor, limit=2000)
        if not page.events:
            return events
        events += page.events
        cursor = page.cursor


def memory_growth(samples: list[list[float]]) -> float:
    """Peak resident memory in the last third of the run over that of the first third."""
    end = samples[-1][0]
    first = max(rss for at, rss in samples if at <= end / 3)
    last = max(rss for at, rss in samples if at >= end * 2 / 3)
    return last / first


@pytest.mark.parametrize("target", ["postgresql", "sqlite"], indirect=True)
async def test_soak_keeps_every_invariant(target: BackendTarget) -> None:
    """Minutes of mixed traffic from 8 processes: nothing lost, nothing doubled, flat memory."""
    async with open_log(target.url, **target.options()):
        pass  # create the schema before the processes race to
    lines = await asyncio.to_thread(run_workers, target)
    done = [line for line in lines if "done" in line]
    assert PROCESSES == len(done)
    ops: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for line in done:
        ops.update(line["ops"])
        errors.update(line["errors"])
    seconds = max(line["seconds"] for line in done)
    growth = {line["done"]: round(memory_growth(line["rss"]), 3) for line in done}
    print(f"\nsoak on {target.name}: {sum(ops.values()) / seconds:.0f} ops/s over {seconds:.0f} s "
          f"({dict(ops)}); errors {dict(errors)}; RSS last/first third {growth}")
    for line in lines:
        if "error" in line:
            print("  error:", line["error"], line["detail"])

    async with open_log(target.url, **target.options()) as log:
        await settle(log)
        events = await whole_log(log)
        claims: dict[str, list[int]] = defaultdict(list)
        effects: dict[str, list[int]] = defaultdict(list)
        checkpoints: set[tuple[str, str]] = set()
        for recorded in events:
            event = recorded.event
            if isinstance(event, BatchClaimed):
                claims[event.batch_id].append(event.generation)
            elif isinstance(event, EffectStarted):
                effects[event.batch_id].append(event.generation)
            elif isinstance(event, CheckpointCreated):
                checkpoints.add((event.session_id, event.checkpoint_id))
        # One claim per generation, generations rising; one dispatch marker per batch.
        assert {} == {b: g for b, g in claims.items() if g != sorted(set(g))}
        assert {} == {b: g for b, g in effects.items() if len(g) > 1}
        # No acknowledged write lost.
        assert set() == {(line["claim"], line["generation"]) for line in lines if "claim" in line
                         } - {(b, g) for b, gs in claims.items() for g in gs}
        assert set() == {(line["effect"], line["generation"]) for line in lines
                         if "effect" in line} - {(b, g) for b, gs in effects.items() for g in gs}
        assert set() == {(line["session"], line["ckpt"]) for line in lines
                         if "ckpt" in line} - checkpoints
        report = await log.verify()
        assert ([], []) == (report.problems, await compare_views(log))
    assert sum(ops.values()) > PROCESSES * 10
    assert sum(1 for line in lines if "effect" in line) > 0
    assert {} == {name: ratio for name, ratio in growth.items() if ratio > 1.1}
