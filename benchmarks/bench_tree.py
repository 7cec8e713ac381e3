"""The transparency tree: head and proof cost as a tenant grows, and the cost of appends
while an integrator keeps the tree, on PostgreSQL (default) or SQLite
(``EVENTLOG_BENCH_TREE_BACKEND=sqlite``: a file in a temporary directory).

- head and proof cost: tenants of 1,000 and 100,000 events (``EVENTLOG_BENCH_TREE_BIG``
  adds a third, e.g. 1000000), each integrated once beforehand (the one-off
  integration time is printed); then per call, interleaved, ``tree_head`` (nothing new to
  integrate), ``prove_inclusion`` of a random event under the current head, and
  ``prove_consistency`` from a random older size. Each ratio is a larger tenant's time per
  call over the 1,000-event one's (goal ≤ 2: O(log n) stored nodes, not n events).
- appends with the tree: single-event appends of a 2 KB-ish event by one writer, alone,
  against the same writer while another task of the same process takes a head of the
  tenant every 250 ms (the integrator extending the tree as the log grows, sharing the
  writer's event loop and its two cores). Goal ≥ 0.9x.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from benchmarks.common import PG_URL, Results, rounds, scratch_schema, section, size
from eventlog import EventLog, open_log
from eventlog.testing.events import Noted

_BATCH = 250
_CALLS = 200


def _backend() -> str:
    backend = os.environ.get("EVENTLOG_BENCH_TREE_BACKEND", "postgresql")
    if backend not in ("postgresql", "sqlite"):
        raise SystemExit(f"EVENTLOG_BENCH_TREE_BACKEND must be postgresql or sqlite, "
                         f"not {backend!r}")
    return backend


@asynccontextmanager
async def _log() -> AsyncIterator[EventLog]:
    """A fresh log on the chosen backend, dropped afterwards."""
    if _backend() == "sqlite":
        with tempfile.TemporaryDirectory(prefix="bench_tree_") as directory:
            async with open_log(f"sqlite:///{directory}/tree.db") as log:
                yield log
        return
    async with scratch_schema() as schema, open_log(PG_URL, schema=schema) as log:
        yield log


async def _fill(log: EventLog, tenant: str, count: int) -> None:
    for start in range(0, count, _BATCH):
        await log.append(tenant, f"s{start // _BATCH % 50}",
                         [Noted(text="x" * 64, number=n)
                          for n in range(min(_BATCH, count - start))])


async def _per_call(log: EventLog, tenant: str, ids: list, size_: int) -> dict[str, float]:
    """Seconds per call of each operation (median of a round's calls is too noisy under
    load; a round's mean over `_CALLS` calls is what is compared)."""
    pick = random.Random(7)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    for _ in range(_CALLS):
        await log.tree_head(tenant)
    timings["head"] = (time.perf_counter() - started) / _CALLS
    started = time.perf_counter()
    for _ in range(_CALLS):
        await log.prove_inclusion(tenant, pick.choice(ids), size_)
    timings["inclusion"] = (time.perf_counter() - started) / _CALLS
    started = time.perf_counter()
    for _ in range(_CALLS):
        await log.prove_consistency(tenant, pick.randrange(1, size_), size_)
    timings["consistency"] = (time.perf_counter() - started) / _CALLS
    return timings


async def _ids(log: EventLog, tenant: str, count: int) -> list:
    pick = random.Random(3)
    wanted = sorted(pick.sample(range(count), min(500, count)))
    ids, cursor, seen = [], None, 0
    while wanted and (page := await log.read_all(after=cursor, limit=5000,
                                                 tenant_id=tenant)).events:
        for event in page.events:
            if wanted and seen == wanted[0]:
                ids.append(event.event_id)
                wanted.pop(0)
            seen += 1
        cursor = page.cursor
    return ids


async def _head_and_proofs(results: Results) -> None:
    small = size(1_000, 100)
    counts = {"small": small, "big": size(100_000, 2_000)}
    if os.environ.get("EVENTLOG_BENCH_TREE_BIG"):
        counts["huge"] = int(os.environ["EVENTLOG_BENCH_TREE_BIG"])
    section(f"Transparency tree on {_backend()}: head and proofs at "
            + " vs ".join(f"{count:,}" for count in counts.values()) + " events of a tenant")
    async with _log() as log:
        for tenant, count in counts.items():
            started = time.perf_counter()
            await _fill(log, tenant, count)
            filled = time.perf_counter() - started
            started = time.perf_counter()
            await log.tree_head(tenant)
            print(f"    {tenant}: {count:,} events appended in {filled:.1f} s, integrated "
                  f"into the tree in {time.perf_counter() - started:.1f} s (once)", flush=True)
        ids = {t: await _ids(log, t, c) for t, c in counts.items()}
        operations = ("head", "inclusion", "consistency")
        figures: dict[str, list[float]] = {f"{op}_{t}": [] for op in operations
                                           for t in counts}
        for _ in range(rounds()):
            for tenant, count in counts.items():
                for op, seconds in (await _per_call(log, tenant, ids[tenant], count)).items():
                    figures[f"{op}_{tenant}"].append(seconds * 1000)
        for tenant, count in counts.items():
            if tenant == "small":
                continue
            for op in operations:
                results.compare(f"tree {op} at {count:,} vs {small:,} events ({_backend()})",
                                f"{op}_{tenant}", f"{op}_small", figures, unit="ms/call",
                                goal="≤ 2", at_most=2.0)


async def _appends(results: Results) -> None:
    count = size(1_000, 100)
    section(f"Appends on {_backend()} with and without the tree kept: {count:,} single-event "
            "appends a round")
    figures: dict[str, list[float]] = {"appends_with_tree": [], "appends_alone": []}
    async with _log() as log:
        await _fill(log, "warm", 10)
        for round_ in range(rounds()):
            for kept in (False, True):
                tenant = f"t{round_}{kept}"
                done = asyncio.Event()

                async def integrate(tenant: str = tenant, done: asyncio.Event = done) -> None:
                    while not done.is_set():
                        await log.tree_head(tenant)
                        await asyncio.sleep(0.25)

                keeper = asyncio.create_task(integrate()) if kept else None
                started = time.perf_counter()
                for n in range(count):
                    await log.append(tenant, f"s{n % 10}", [Noted(text="x" * 2000, number=n)])
                rate = count / (time.perf_counter() - started)
                done.set()
                if keeper is not None:
                    await keeper
                figures["appends_with_tree" if kept else "appends_alone"].append(rate)
    results.compare(f"appends while the tree is kept ({_backend()})", "appends_with_tree",
                    "appends_alone", figures, unit="appends/s", goal="≥ 0.9", at_least=0.9)


async def run(results: Results) -> None:
    await _head_and_proofs(results)
    await _appends(results)
