"""What a thread removal costs now that it folds the thread's events (issue 41; before,
issue 32 §6, it read the thread record views every put wrote).

    python -m benchmarks.bench_removal [sqlite|postgresql ...]

On each backend, in one run:

- **The fold against its floor**: `eventlog.checkpoints.holdings.fold_thread` over a thread
  of ``CHECKPOINTS`` graph steps (a `ThreadCheckpoints.put` with two channels, then
  `put_writes` of two writes: two events a step), beside the same stream read as stored
  events through the log's checked reads with nothing folded (`SignedReads.stored_stream`)
  and beside `EventLog.read_stream` (which decodes and opens every event): medians of
  ``ROUNDS``, and ``fold ÷ checked read``.
- **A retention pass** purging all but 3 of that thread's checkpoints (batch_size=100):
  its seconds, its longest batch (`RetentionReport.longest_batch_s`: the plan with its
  fold, and the append with the fold of the stream that checks its releases) and its
  longest transaction (the storage's ``append_batch``: what a writer of the thread waits
  for); on PostgreSQL beside the same pass with each statement sent one round trip at a
  time, as before pipelining (`eventlog.storage.postgres._run_statements`).
- **A graph step** (put + put_writes), median of ``ROUNDS`` rounds of ``STEPS``: what the
  write path costs without the record views (bench_steps counts its b-trees and WAL).

Figures from a loaded machine are noisy: compare the ratios, run it 2-3 times.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg

import eventlog.storage.postgres as pg_storage
from eventlog import OpenLog, open_log
from eventlog.checkpoints.holdings import fold_thread
from eventlog.checkpoints.thread_records import Payload

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
STEPS = 150
ROUNDS = 3
CHECKPOINTS = {"sqlite": 2000, "postgresql": 1000}


async def _step(log: OpenLog, thread: str, n: int) -> None:
    checkpoint = f"{n:08d}"
    await log.threads.put("t", thread, checkpoint, state=Payload("json", b'{"n": %d}' % n),
                          channels={"messages": Payload("json", b'["%d"]' % n),
                                    "step": Payload("json", b"%d" % (n // 2))})
    await log.threads.put_writes("t", thread, checkpoint, "task",
                                 [(0, "messages", Payload("json", b'"w"')),
                                  (1, "step", Payload("json", b"%d" % n))])


def _opened(backend: str, where: Path) -> AbstractAsyncContextManager[OpenLog]:
    @asynccontextmanager
    async def opened() -> AsyncIterator[OpenLog]:
        if backend == "sqlite":
            url, options = f"sqlite:///{where / f'{uuid.uuid4().hex}.db'}", {}
        else:
            url, options = PG_URL, {"schema": f"bench_rm_{uuid.uuid4().hex[:10]}"}
        async with open_log(url, **options) as log:
            assert isinstance(log, OpenLog)
            try:
                yield log
            finally:
                if backend == "postgresql":
                    connection = await asyncpg.connect(PG_URL)
                    await connection.execute(f'DROP SCHEMA "{options["schema"]}" CASCADE')
                    await connection.close()
    return opened()


async def _one_by_one(statements: Any, driver: Any) -> list[int]:
    """The runner before pipelining: one round trip a statement."""
    result: Any = None
    try:
        while True:
            sql, values, returns = statements.send(result)
            result = await (driver.fetchval if returns else driver.execute)(sql, *values)
    except StopIteration as done:
        positions: list[int] = done.value
        return positions


async def _fill(log: OpenLog, count: int) -> None:
    for n in range(count):
        await _step(log, "big", n)


async def _folds(log: OpenLog) -> dict[str, float]:
    """Median seconds of the fold and of its two floors over the filled thread."""
    timings: dict[str, list[float]] = {"fold": [], "checked read": [], "read_stream": []}

    async def checked() -> None:
        async for _stored in log.signed.stored_stream("t", "thread:big"):
            pass

    async def decoded() -> None:
        async for _event in log.read_stream("t", "thread:big"):
            pass

    async def fold() -> None:
        await fold_thread(log, "t", "big")

    for _round in range(ROUNDS):
        for name, run in (("fold", fold), ("checked read", checked),
                          ("read_stream", decoded)):
            started = time.perf_counter()
            await run()
            timings[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in timings.items()}


async def _removal(log: OpenLog, sequential: bool) -> tuple[float, float, float]:
    """The pass's seconds, its longest batch, and the longest of its transactions (the
    storage's ``append_batch``: what holds the streams a writer waits for)."""
    pipelined = pg_storage._run_statements
    if sequential:
        pg_storage._run_statements = _one_by_one  # type: ignore[assignment]
    storage = log.storage
    transaction = storage.append_batch
    longest = [0.0]

    async def timed(requests: Any) -> Any:
        started = time.monotonic()
        try:
            return await transaction(requests)
        finally:
            longest[0] = max(longest[0], time.monotonic() - started)

    storage.append_batch = timed  # type: ignore[method-assign]
    try:
        started = time.monotonic()
        report = await log.retention.apply("t", keep_latest=3, batch_size=100)
        return time.monotonic() - started, report.longest_batch_s, longest[0]
    finally:
        pg_storage._run_statements = pipelined  # type: ignore[assignment]
        storage.append_batch = transaction  # type: ignore[method-assign]


async def bench(backend: str) -> None:
    count = CHECKPOINTS[backend]
    with tempfile.TemporaryDirectory() as scratch:
        async with _opened(backend, Path(scratch)) as log:
            started = time.monotonic()
            await _fill(log, count)
            filled = time.monotonic() - started
            folds = await _folds(log)
            steps = []
            for round_ in range(ROUNDS):
                started = time.monotonic()
                for n in range(STEPS):
                    await _step(log, f"w{round_}", n)
                steps.append((time.monotonic() - started) / STEPS)
        print(f"{backend}: filling a thread of {count} steps took {filled:.1f} s; a graph step "
              f"(put + put_writes), median of {ROUNDS} rounds of {STEPS}: "
              f"{statistics.median(steps) * 1e3:.2f} ms")
        print(f"{backend}: folding the thread's {2 * count} events: fold "
              f"{folds['fold'] * 1e3:.1f} ms, checked read {folds['checked read'] * 1e3:.1f} ms, "
              f"read_stream {folds['read_stream'] * 1e3:.1f} ms "
              f"(fold / checked read {folds['fold'] / folds['checked read']:.2f}, "
              f"fold / read_stream {folds['fold'] / folds['read_stream']:.2f})")
        names = ["pipelined"] + (["one by one"] if backend == "postgresql" else [])
        for name in names:
            async with _opened(backend, Path(scratch)) as log:
                await _fill(log, count)
                seconds, longest, held = await _removal(log, name == "one by one")
            print(f"{backend}: a pass purging {count - 3} of {count} checkpoints of one "
                  f"thread, {name}: {seconds:.2f} s, longest batch {longest:.3f} s, longest "
                  f"transaction {held:.3f} s")


if __name__ == "__main__":
    for backend in sys.argv[1:] or ["sqlite", "postgresql"]:
        asyncio.run(bench(backend))
