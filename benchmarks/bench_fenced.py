"""What single-writer mode costs: the LangGraph saver's ``aput`` and ``aput_writes`` fenced
(``fenced=True``) beside the same calls unfenced, on a SQLite file and on PostgreSQL.

One log, two savers over it (one fenced, one not), each writing threads of its own: every
put names the thread's previous checkpoint as its parent (a graph's chain, ~2 KB changed
each step, uuid6 ids), every write goes to the thread's head. A third contestant is a
fenced put that remembers nothing (its thread's basis is forgotten before each call), as
each put of a writer is after another process appended to its thread: it reads the
stream's version and the namespace's head before its fenced append. Inside a round the
contestants take turns every `BLOCK` calls, each contestant's rate being its calls over its
own time (the disk's flush time swings within seconds), each block begun by the next
contestant; the ratio is the median over
rounds. Ratios are calls/s fenced ÷ unfenced: 1.0 is free, below 1 is the cost.
Run: ``python -m benchmarks --only fenced``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from benchmarks.common import PG_URL, Results, rounds, scratch_schema, section, size
from eventlog import OpenLog, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver

BLOCK = 25
STEPS = 50  # puts per thread
MESSAGES = ["x" * 100] * 18  # ~2 KB
Call = Callable[[], Awaitable[object]]


class Chain:
    """One contestant's threads: each call puts the next checkpoint of the current thread
    (or writes to its head), moving to a new thread every `STEPS` calls."""

    def __init__(self, saver: AsyncEventlogSaver, prefix: str, *, forget: bool = False):
        self.saver = saver
        self.prefix = prefix
        self.forget = forget
        self.calls = 0
        self.head: dict[str, Any] = {}

    async def put(self) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        step = self.calls % STEPS
        if step == 0:
            thread = f"{self.prefix}-{self.calls // STEPS}"
            self.head = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        if self.forget:
            self.saver.log.threads._fence._known.clear()  # as after another process's put
        made: dict[str, Any] = dict(empty_checkpoint())
        version = self.saver.get_next_version(None, None)
        made["channel_values"] = {"messages": [*MESSAGES, step]}
        made["channel_versions"] = {"messages": version}
        self.head = await self.saver.aput(self.head, made, {"source": "loop", "step": step},
                                          {"messages": version})
        self.calls += 1

    async def write(self) -> None:
        if self.calls % STEPS == 0:
            await self.put()
        await self.saver.aput_writes(self.head, [("messages", MESSAGES)], f"t{self.calls}")
        self.calls += 1


async def turns(count: int, contestants: dict[str, Call]) -> dict[str, list[float]]:
    """Calls/s of each contestant per round, taking turns every `BLOCK` calls."""
    results: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds()):
        spent = dict.fromkeys(contestants, 0.0)
        order = list(contestants.items())
        for block in range(max(1, count // BLOCK)):
            # Each block starts with the next contestant: a WAL checkpoint or a slow flush
            # lands on each in turn, not always on the one after the first.
            for name, call in order[block % len(order):] + order[:block % len(order)]:
                started = time.perf_counter()
                for _ in range(BLOCK):
                    await call()
                spent[name] += time.perf_counter() - started
        for name in contestants:
            results[name].append(max(1, count // BLOCK) * BLOCK / spent[name])
    return results


async def backend(results: Results, name: str, log: OpenLog) -> None:
    count = size(200, BLOCK)
    unfenced = AsyncEventlogSaver(log, tenant_id="bench")
    fenced = AsyncEventlogSaver(log, tenant_id="bench", fenced=True)
    cold = AsyncEventlogSaver(log.sibling(), tenant_id="bench", fenced=True)  # own store
    puts = await turns(count, {
        "unfenced aput": Chain(unfenced, "u").put,
        "fenced aput": Chain(fenced, "f").put,
        "fenced aput, nothing remembered": Chain(cold, "c", forget=True).put,
    })
    results.compare(f"{name}: fenced aput vs unfenced", "fenced aput", "unfenced aput",
                    puts, goal="≥ 0.9", at_least=0.9)
    results.compare(f"{name}: fenced aput after another writer vs unfenced",
                    "fenced aput, nothing remembered", "unfenced aput", puts,
                    goal="report")
    writes = await turns(count, {
        "unfenced aput_writes": Chain(unfenced, "uw").write,
        "fenced aput_writes": Chain(fenced, "fw").write,
    })
    results.compare(f"{name}: fenced aput_writes vs unfenced", "fenced aput_writes",
                    "unfenced aput_writes", writes, goal="≥ 0.9", at_least=0.9)
    print(f"    (medians of {len(next(iter(puts.values())))} rounds; "
          f"{statistics.median(puts['unfenced aput']):.0f} unfenced puts/s)")


async def run(results: Results) -> None:
    section("single-writer threads: fenced puts and writes beside unfenced")
    with tempfile.TemporaryDirectory() as directory:
        async with open_log(f"sqlite:///{Path(directory) / 'fenced.db'}") as log:
            await backend(results, "SQLite", log)
    async with AsyncExitStack() as stack:
        schema = await stack.enter_async_context(scratch_schema())
        log = await stack.enter_async_context(open_log(PG_URL, schema=schema))
        await backend(results, "PostgreSQL", log)
