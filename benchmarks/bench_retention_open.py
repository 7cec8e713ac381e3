"""What deciding open interrupt batches from their signed events costs a retention pass
(issue 40 §3), on SQLite and PostgreSQL.

A tenant of ``SESSIONS`` sessions of two checkpoints each and ``BATCHES`` interrupt
batches (one in ten pending, the rest finalized: two events each), on an encrypted log
whose keyring holds a writer key (every event signed). Two contestants, interleaved
round by round in one process:

- ``view``: the open batches read from the ``interrupt_batches`` view (one indexed query:
  what main did, and what a DBA's edit of a row steers);
- ``events``: folded from the batch streams' events, each one's chain link and writer
  signature checked (one scan of the tenant's ``interrupt-batch:`` key range: what a
  pass does now).

Reported: the decision alone (ms per call), and a whole dry-run pass (``keep_latest=1``)
with each, and (``pass: events, a hold``) one while a legal hold stands, when a pass also
reads the events of each session it would purge from for the subjects they name
(the order alternating round by round, a first round unreported).
Run: ``python -m benchmarks.bench_retention_open``. Caveats: 2 shared cores,
other work running; fsync on; one run.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.crypto import init_keyring
from eventlog.events.interrupts import BatchFinalized, batch_stream
from eventlog.retention import decisions as decide
from eventlog.retention.store import RetentionStore
from eventlog.testing.interrupts import create
from projections.interrupts import BATCHES
from projections.query import In, ViewQuery

SESSIONS = 1000
BATCHES_MADE = 300
ROUNDS = 5


async def _from_view(store: RetentionStore, tenant_id: str) -> set[str]:
    rows = await store.log.query(ViewQuery(
        BATCHES, {"tenant_id": tenant_id, "state": In(decide.OPEN_BATCH_STATES)},
        columns=("thread_id",)))
    return {row["thread_id"] for row in rows}


@asynccontextmanager
async def _log(backend: str, directory: Path) -> AsyncIterator[OpenLog]:
    ring = init_keyring(directory / "ring.json")
    if backend == "sqlite":
        async with open_log(f"sqlite:///{directory}/r.db", keyring=ring) as log:
            yield log
        return
    from benchmarks.common import PG_URL, scratch_schema

    async with scratch_schema() as schema, open_log(PG_URL, schema=schema,
                                                    keyring=ring) as log:
        yield log


async def _fill(log: OpenLog) -> None:
    run = uuid.uuid4()
    for n in range(SESSIONS):
        for step in range(2):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{n:05d}", run_id=run, step=step,
                checkpoint_id=f"c{step}", state={"n": n, "step": step}))
    for n in range(BATCHES_MADE):
        batch = await create(log, "t", f"s{n:05d}")
        if n % 10:
            await log.append("t", batch_stream(batch.batch_id),
                             [BatchFinalized(batch_id=batch.batch_id, generation=0)])


async def _ms(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def bench(backend: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        async with _log(backend, Path(scratch)) as log:
            await _fill(log)
            store = log.retention
            new = store._open_subjects
            assert await new("t") == await _from_view(store, "t")
            old = lambda tenant: _from_view(store, tenant)  # noqa: E731
            figures: dict[str, list[float]] = {key: [] for key in (
                "decide: view", "decide: events", "pass: view", "pass: events")}
            for turn in range(ROUNDS + 1):  # the first round warms the caches, unreported
                order = [("view", old), ("events", new)]
                for name, decide_open in order if turn % 2 else order[::-1]:
                    spent = await _ms(lambda chosen=decide_open: chosen("t"))
                    store._open_subjects = decide_open  # type: ignore[method-assign]
                    whole = await _ms(lambda: store.apply("t", keep_latest=1, dry_run=True))
                    if turn:
                        figures[f"decide: {name}"].append(spent)
                        figures[f"pass: {name}"].append(whole)
            store._open_subjects = new  # type: ignore[method-assign]
            # With a hold standing (on a subject no record names), a pass also reads each
            # stream it would purge from, for the subjects its events name.
            await store.hold("t", "nobody", reason="benchmark")
            figures["pass: events, a hold"] = [
                await _ms(lambda: store.apply("t", keep_latest=1, dry_run=True))
                for _ in range(ROUNDS)]
    print(f"{backend}: {SESSIONS} sessions, {BATCHES_MADE} batches "
          f"({BATCHES_MADE // 10} open), median of {ROUNDS} (ms)")
    for name, values in figures.items():
        print(f"  {name:22} {statistics.median(values):9.1f}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["sqlite", "postgresql"]:
        asyncio.run(bench(name))
