"""`eventlog serve` as a tenant grows (issue 43): list pages, a filtered page and a long
thread's page, on SQLite and PostgreSQL, beside the CLI's ``timeline`` of the same thread.

A tenant of ``THREADS`` threads of ``CHECKPOINTS`` checkpoints each (10,000 x 50: 500,000
events) and a tenant a tenth its size, loaded as the very events the thread store's ``put``
appends (one append per thread), and one thread of 1,000 steps. Through Starlette's
TestClient (in process, with its HTTP handling): the first list page, a page filtered by id
prefix and one filtered by actor, each's p95 over ``CALLS`` requests, in both tenants (the
ratio large ÷ small says how flat the list is; the median of `rounds()` rounds, the
tenants taking turns); the 1,000-step thread's page; and
``eventlog timeline`` on that thread as a process (start-up included); the peak of
Python's allocations while a first page is served, in both tenants (memory flat in the
tenant's size).

``EVENTLOG_BENCH_CONSOLE_THREADS`` sets the large tenant's threads (default 10,000; quick:
40); ``EVENTLOG_BENCH_CONSOLE_BACKENDS`` the backends (default ``sqlite,postgresql``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from benchmarks.common import (
    PG_URL,
    Results,
    percentile,
    quick,
    rounds,
    scratch_schema,
    section,
    size,
)
from eventlog import EventLog, open_log
from eventlog.checkpoints import thread_decisions as decide
from eventlog.checkpoints.thread_records import Payload
from eventlog.events import Event

CHECKPOINTS = 50
LONG_STEPS = 1_000
CALLS = 20
TOKEN = "bench-token-" + "x" * 20
ROOT = Path(__file__).resolve().parents[1]


def _threads() -> int:
    return int(os.environ.get("EVENTLOG_BENCH_CONSOLE_THREADS") or size(10_000, 40))


async def _load(log: EventLog, tenant: str, threads: int, steps: int, prefix: str) -> None:
    """``threads`` threads of ``steps`` checkpoints each, one append per thread."""
    for number in range(threads):
        thread = f"{prefix}-{number:06d}"
        events: list[Event] = []
        attach: list[bytes] = []
        parent = None
        for step in range(steps):
            checkpoint = f"1f0-{step:08d}"
            event, blobs = decide.put_event(
                thread_id=thread, namespace="", checkpoint_id=checkpoint, parent_id=parent,
                run_key="run", step=step,
                state=Payload("msgpack", b"\x81\xa4step" + bytes([step % 128])),
                channels={}, metadata={"source": "loop", "step": step},
                max_bytes=log.max_payload_bytes)
            events.append(event)
            attach += blobs
            parent = checkpoint
        with log.acting_as(f"worker-{number % 7}"):
            await log.append(tenant, decide.thread_stream(thread), events, attach=attach)


def _opener(url: str, options: dict[str, Any]) -> Callable[
        [], AbstractAsyncContextManager[EventLog]]:
    from eventlog.cli.lenient import LenientRegistry
    from eventlog.events import default_registry

    @asynccontextmanager
    async def opened() -> AsyncIterator[EventLog]:
        async with open_log(url, registry=LenientRegistry(default_registry),
                            **options) as log:
            yield log

    return opened


def _p95(client: Any, path: str, calls: int) -> float:
    """The p95 of ``calls`` GETs of ``path``, in ms."""
    headers = {"authorization": f"Bearer {TOKEN}"}
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        response = client.get(path, headers=headers)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:200]
    return percentile(timings, 0.95)


async def _backend(name: str, url: str, options: dict[str, Any], results: Results) -> None:
    from starlette.testclient import TestClient

    from eventlog.cli.serve.access import Access, Grant
    from eventlog.cli.serve.app import build_app

    large = _threads()
    small = max(1, large // 10)
    steps = size(CHECKPOINTS, 5)
    long_steps = size(LONG_STEPS, 50)
    started = time.perf_counter()
    async with open_log(url, **options) as log:
        await _load(log, "big", large, steps, "thread")
        await _load(log, "small", small, steps, "thread")
        await _load(log, "big", 1, long_steps, "long")
    print(f"  {name}: loaded {large:,} + {small:,} threads of {steps} checkpoints and one of "
          f"{long_steps:,} in {time.perf_counter() - started:.0f} s")
    access = Access([Grant("bench", TOKEN, None)])
    figures: dict[str, list[float]] = {}
    with TestClient(build_app(_opener(url, options), access, {}, name)) as client:
        for label, query in (("first page", ""), ("prefix", "?q=thread-0001"),
                             ("actor", "?actor=worker-3")):
            for tenant in ("big", "small"):
                _p95(client, f"/t/{tenant}{query}", 3)  # warm
            for _ in range(rounds()):  # the two tenants take turns, round by round
                for tenant in ("big", "small"):
                    figures.setdefault(f"{tenant} {label}", []).append(
                        _p95(client, f"/t/{tenant}{query}", size(CALLS, 5)))
            for tenant in ("big", "small"):
                value = statistics.median(figures[f"{tenant} {label}"])
                print(f"    {name} {tenant:<5} {label:<10} p95 {value:8.1f} ms "
                      "(median of the rounds)")
        for tenant in ("big", "small"):  # Python's allocations while serving a page
            tracemalloc.start()
            _p95(client, f"/t/{tenant}", 1)
            peak = tracemalloc.get_traced_memory()[1] / 1024
            tracemalloc.stop()
            figures[f"{tenant} first page KiB"] = [peak]
            print(f"    {name} {tenant:<5} first page: peak {peak:8.0f} KiB allocated")
        _p95(client, "/t/big/s/long-000000", 1)
        page = _p95(client, "/t/big/s/long-000000", size(5, 2))
        figures["long thread page"] = [page]
        print(f"    {name} {long_steps:,}-step thread page p95 {page:8.1f} ms")
    arguments = ["timeline", "big", "long-000000", "--url", url]
    if "schema" in options:
        arguments += ["--schema", options["schema"]]
    code = ("import sys\nfrom eventlog.cli import main\nsys.argv = ['eventlog', "
            "*sys.argv[1:]]\nsys.exit(main())\n")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *arguments], check=True, cwd=ROOT,  # noqa: ASYNC221
                   stdout=subprocess.DEVNULL)
    timeline = (time.perf_counter() - started) * 1000
    figures["timeline"] = [timeline]
    print(f"    {name} `eventlog timeline` of the same thread (a process) {timeline:8.1f} ms")
    for label in ("first page", "prefix", "actor"):
        results.compare(f"console {name}: {label} p95, 10× the tenant", f"big {label}",
                        f"small {label}", figures, unit="ms", goal="≤ 1.5 (flat)",
                        at_most=None if quick() else 1.5)
    results.notes[f"console {name}"] = {key: statistics.median(value)
                                        for key, value in figures.items()}


async def run(results: Results) -> None:
    section("console: eventlog serve's pages as a tenant grows (issue 43)")
    backends = (os.environ.get("EVENTLOG_BENCH_CONSOLE_BACKENDS") or "sqlite,postgresql")
    for name in backends.split(","):
        if name == "sqlite":
            with tempfile.TemporaryDirectory() as directory:
                await _backend(name, f"sqlite:///{directory}/console.db", {}, results)
        elif name == "postgresql":
            async with scratch_schema() as schema:
                await _backend(name, PG_URL, {"schema": schema}, results)
