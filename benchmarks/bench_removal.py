"""What a thread removal costs, and what the indexes serving it cost a write (issue 32 §6).

    python -m benchmarks.bench_removal [sqlite|postgresql ...]

Contestants on each backend, in one run:

- ``indexed``: the schema as migrated (0017's indexes on the thread record views);
- ``bare``: the same with those three indexes dropped (the schema before 0017);
- ``bare, one by one`` (PostgreSQL only): ``bare`` with a sequential append's statements
  sent one round trip each, as before pipelining (`eventlog.storage.postgres._run_statements`).

Writes: interleaved rounds of ``STEPS`` graph steps (a `ThreadCheckpoints.put` with two
channels, then `put_writes` of two writes), the median seconds a step, as a ratio of
``indexed`` to ``bare``. Removal: each contestant's own thread of ``CHECKPOINTS``
checkpoints (and writes) is purged by one retention pass (keep_latest=3, batch_size=100):
the pass's seconds, its longest batch (`RetentionReport.longest_batch_s`: the append,
with the fold of the thread's references that checks its releases) and its longest
transaction (the storage's ``append_batch``: what a writer of the thread waits for).
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
from eventlog.checkpoints.thread_records import Payload

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
INDEXES = ("thread_checkpoint_records_by_checkpoint", "thread_write_records_by_checkpoint",
           "thread_value_records_by_value")
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


def _opened(backend: str, bare: bool, where: Path) -> AbstractAsyncContextManager[OpenLog]:
    @asynccontextmanager
    async def opened() -> AsyncIterator[OpenLog]:
        if backend == "sqlite":
            url, options = f"sqlite:///{where / f'{uuid.uuid4().hex}.db'}", {}
        else:
            url, options = PG_URL, {"schema": f"bench_rm_{uuid.uuid4().hex[:10]}"}
        async with open_log(url, **options) as log:
            assert isinstance(log, OpenLog)
            if bare:
                await _drop_indexes(backend, url, options)
            try:
                yield log
            finally:
                if backend == "postgresql":
                    connection = await asyncpg.connect(PG_URL)
                    await connection.execute(f'DROP SCHEMA "{options["schema"]}" CASCADE')
                    await connection.close()
    return opened()


async def _drop_indexes(backend: str, url: str, options: dict[str, Any]) -> None:
    if backend == "sqlite":
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            for name in INDEXES:
                connection.execute(f"DROP INDEX {name}")
        return
    connection = await asyncpg.connect(PG_URL)
    for name in INDEXES:
        await connection.execute(f'DROP INDEX "{options["schema"]}"."{name}"')
    await connection.close()


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


async def _removal(log: OpenLog, count: int, sequential: bool) -> tuple[float, float, float]:
    """The pass's seconds, its longest batch, and the longest of its transactions (the
    storage's ``append_batch``: what holds the streams a writer waits for)."""
    for n in range(count):
        await _step(log, "big", n)
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
    with tempfile.TemporaryDirectory() as scratch:
        names = ["indexed", "bare"] + (["bare, one by one"] if backend == "postgresql" else [])
        steps: dict[str, list[float]] = {name: [] for name in names[:2]}
        async with _opened(backend, False, Path(scratch)) as indexed, \
                _opened(backend, True, Path(scratch)) as bare:
            for round_ in range(ROUNDS):
                for name, log in (("indexed", indexed), ("bare", bare))[::1 - 2 * (round_ % 2)]:
                    started = time.monotonic()
                    for n in range(STEPS):
                        await _step(log, f"w{round_}", n)
                    steps[name].append((time.monotonic() - started) / STEPS)
        medians = {name: statistics.median(values) for name, values in steps.items()}
        ratio = medians["indexed"] / medians["bare"]
        print(f"{backend}: a graph step (put + put_writes), median of {ROUNDS} rounds of "
              f"{STEPS}: indexed {medians['indexed'] * 1e3:.2f} ms, bare "
              f"{medians['bare'] * 1e3:.2f} ms (indexed/bare {ratio:.2f})")
        for name in names:
            async with _opened(backend, name != "indexed", Path(scratch)) as log:
                seconds, longest, held = await _removal(log, CHECKPOINTS[backend],
                                                        name == "bare, one by one")
            print(f"{backend}: a pass purging {CHECKPOINTS[backend] - 3} of "
                  f"{CHECKPOINTS[backend]} checkpoints of one thread, {name}: {seconds:.2f} s, "
                  f"longest batch {longest:.3f} s, longest transaction {held:.3f} s")


if __name__ == "__main__":
    for backend in sys.argv[1:] or ["sqlite", "postgresql"]:
        asyncio.run(bench(backend))
