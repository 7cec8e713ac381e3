"""Thread reads on PostgreSQL, flat as a thread and its tenant grow (issue 25).

The shape a one-node chat graph writes: every step changes ``messages`` (~2 KB) and
``step``, with the version strings LangGraph's ``get_next_version`` makes
(``00000000000000000000000000000845.0.5669…``) and uuid6 checkpoint ids, each put naming
its parent. Four tenants of the adapter over one log: a 10-step thread alone, a 1,000-step
thread alone, a 10,000-step thread alone, and a 1,000-step thread beside 100 others of
1,000 steps (written after it, so their ids are all newer). LangGraph's
``AsyncPostgresSaver`` gets the 10-, 1,000- and 10,000-step threads in a schema of its own.

Measured, as the p50 latency of each round's calls (contestants taking turns call by call,
the median of the rounds):
``aget_tuple`` of the latest checkpoint and of one by id (the middle one), and
``alist(limit=10)``. Ratios: each read on the 10,000-step thread and beside 100 others,
to the same read on the 10-step thread and alone (flat: ≤ 1.1); ours to LangGraph's on
1,000 and 10,000 steps (as calls/s: above 1 is faster). Our threads are loaded as the very
events ``aput`` appends, 1,000 to an append (100,000 puts one by one would take minutes);
LangGraph's by ``aput``. Quick mode: 10, 40 and 100 steps beside 3 others of 40.

What bounds the ratios to LangGraph: a contestant of one bare round trip (``SELECT 1``
on a connection of its own) takes its turns too, and LangGraph's 10,000-step read ÷ it
is printed: no read of one statement (ours, as LangGraph's, is one) can be faster than
that many times LangGraph's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import asyncpg

from benchmarks.common import (
    PG_URL,
    Results,
    percentile,
    rounds,
    scratch_schema,
    section,
    size,
)
from eventlog import EventLog, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints import thread_decisions as decide
from eventlog.events import Event

MESSAGES = ["x" * 100] * 18  # ~2 KB
CHUNK = 1000
Read = Callable[[int], Awaitable[object]]


def chat_steps(saver: Any, steps: int) -> Iterator[tuple[dict[str, Any], dict[str, Any],
                                                           dict[str, Any]]]:
    """(checkpoint, metadata, new_versions) of each step of a one-node chat graph."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    versions: dict[str, Any] = {"messages": None, "step": None}
    for step in range(steps):
        new = {name: saver.get_next_version(versions[name], None) for name in versions}
        versions.update(new)
        checkpoint: dict[str, Any] = dict(empty_checkpoint())
        checkpoint["id"] = str(uuid6(clock_seq=step))
        checkpoint["channel_values"] = {"messages": [*MESSAGES, f"step {step}"], "step": step}
        checkpoint["channel_versions"] = dict(versions)
        yield checkpoint, {"source": "loop", "step": step, "parents": {}}, new


async def load_ours(saver: AsyncEventlogSaver, thread: str, steps: int) -> str:
    """Append the events ``aput`` would for ``steps`` steps, 1,000 to an append; return
    the middle checkpoint's id."""
    from langgraph.checkpoint.base import get_serializable_checkpoint_metadata

    log: EventLog = saver.log
    events: list[Event] = []
    attach: list[bytes] = []
    parent = None
    ids: list[str] = []
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for checkpoint, metadata, new in chat_steps(saver, steps):
        state = dict(checkpoint)
        values = state.pop("channel_values")
        # Lists are stored element by element, as `ThreadCheckpoints.put` plans them.
        plan, remember = saver._threads._elements.plan(
            saver.tenant_id, thread, "",
            saver._channels(checkpoint["channel_versions"], new, values, (thread, "")))
        event, blobs = decide.put_event(
            thread_id=thread, namespace="", checkpoint_id=checkpoint["id"], parent_id=parent,
            run_key=None, step=metadata["step"], state=saver._dump(state),
            channels=plan.channels,
            metadata=dict(get_serializable_checkpoint_metadata(config, metadata)),  # type: ignore[arg-type]
            max_bytes=log.max_payload_bytes,
        )
        event, blobs = plan.apply(event, blobs)
        remember()
        events.append(event)
        attach += blobs
        parent = checkpoint["id"]
        ids.append(parent)
        if len(events) == CHUNK:
            await log.append(saver.tenant_id, decide.thread_stream(thread), events,
                             attach=attach)
            events, attach = [], []
    if events:
        await log.append(saver.tenant_id, decide.thread_stream(thread), events, attach=attach)
    return ids[len(ids) // 2]


async def load_theirs(saver: Any, thread: str, steps: int) -> str:
    """``aput`` each step into LangGraph's saver; return the middle checkpoint's id."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    ids: list[str] = []
    for checkpoint, metadata, new in chat_steps(saver, steps):
        config = await saver.aput(config, checkpoint, metadata, new)
        ids.append(checkpoint["id"])
    return ids[len(ids) // 2]


def reads(saver: Any, thread: str, middle: str) -> dict[str, Read]:
    """The three reads of one thread."""
    latest = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    by_id = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": middle}}

    async def page(_i: int) -> None:
        found = [item async for item in saver.alist(latest, limit=10)]
        assert len(found) == 10

    return {"latest": lambda _i: saver.aget_tuple(latest),
            "by id": lambda _i: saver.aget_tuple(by_id), "page": page}


async def p50_rounds(calls: int, contestants: dict[str, Read]) -> dict[str, list[float]]:
    """Each contestant's p50 latency (ms) in every one of `rounds()` rounds; within a
    round the contestants take turns call by call (A B C … A B C …), so a burst of load
    from the machine's other work lands on all of them alike."""
    figures: dict[str, list[float]] = {name: [] for name in contestants}
    for _ in range(rounds()):
        timings: dict[str, list[float]] = {name: [] for name in contestants}
        for index in range(calls):
            for name, read in contestants.items():
                started = time.perf_counter()
                await read(index)
                timings[name].append(time.perf_counter() - started)
        for name, values in timings.items():
            figures[name].append(percentile(values, 0.5) * 1000)
    return figures


async def run(results: Results) -> None:
    small, middle, large = size(10, 10), size(1000, 40), size(10_000, 100)
    others, other_steps = size(100, 3), size(1000, 40)
    calls = size(200, 5)
    section(f"Thread reads: {small}, {middle} and {large} steps; {middle} beside {others} "
            f"others of {other_steps}; p50 of {calls} calls per round")
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]' to compare)")
        return
    async with scratch_schema() as schema, open_log(PG_URL, schema=schema) as log:
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'CREATE SCHEMA "{schema}_langgraph"')
        await connection.close()
        async with AsyncPostgresSaver.from_conn_string(
                PG_URL + f"?options=-csearch_path%3D{schema}_langgraph") as theirs:
            await theirs.setup()
            ours = {name: AsyncEventlogSaver(log, tenant_id=name)
                    for name in ("small", "middle", "large", "crowd")}
            sizes = {"small": small, "middle": middle, "large": large, "crowd": middle}
            middles = {name: await load_ours(ours[name], f"{name}-{sizes[name]}", sizes[name])
                       for name in sizes}
            for n in range(others):
                await load_ours(ours["crowd"], f"other-{n}", other_steps)
            lg = {name: await load_theirs(theirs, f"lg-{sizes[name]}", sizes[name])
                  for name in ("small", "middle", "large")}
            await _analyze(schema)
            floor = await asyncpg.connect(PG_URL)
            for read in ("latest", "by id", "page"):
                contestants = {
                    f"{name} {read}": reads(ours[name], f"{name}-{sizes[name]}",
                                            middles[name])[read]
                    for name in sizes
                }
                contestants |= {
                    f"langgraph {name} {read}": reads(theirs, f"lg-{sizes[name]}",
                                                      lg[name])[read]
                    for name in ("middle", "large")
                }
                contestants["round trip"] = lambda _i: floor.fetchval("SELECT 1")
                figures = await p50_rounds(calls, contestants)
                _compare(results, read, figures, sizes, others)
            await floor.close()


def _compare(results: Results, read: str, figures: dict[str, list[float]],
             sizes: dict[str, int], others: int) -> None:
    results.compare(f"thread {read}: p50 at {sizes['large']} steps ÷ at {sizes['small']}",
                    f"large {read}", f"small {read}", figures, unit="ms",
                    goal="≤ 1.1", at_most=1.1)
    results.compare(f"thread {read}: p50 beside {others} threads ÷ alone",
                    f"crowd {read}", f"middle {read}", figures, unit="ms",
                    goal="≤ 1.1", at_most=1.1)
    rates = {name: [1000 / value for value in values] for name, values in figures.items()}
    for name, goal in (("middle", 1.5), ("large", 10.0)):
        results.compare(
            f"thread {read}, {sizes[name]} steps, vs LangGraph",
            f"{name} {read}", f"langgraph {name} {read}", rates, unit="calls/s (1/p50)",
            goal=f"≥ {goal:g}", at_least=goal)
    print("    " + "  ".join(f"{name}: {statistics.median(values):.2f} ms"
                             for name, values in figures.items()))
    bound = statistics.median(figures[f"langgraph large {read}"]) / statistics.median(
        figures["round trip"])
    print(f"    bound: LangGraph's {sizes['large']}-step {read} is {bound:.1f} round trips "
          "(SELECT 1): the most any one-statement read can be ahead of it")


async def _analyze(schema: str) -> None:
    """Fresh statistics, as autovacuum would give a loaded table (both schemas)."""
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute(f'SET search_path = "{schema}"; ANALYZE thread_checkpoints; '
                                 "ANALYZE thread_channel_values; ANALYZE thread_writes; "
                                 f'ANALYZE blobs; SET search_path = "{schema}_langgraph"; '
                                 "ANALYZE checkpoints; ANALYZE checkpoint_blobs; "
                                 "ANALYZE checkpoint_writes")
    finally:
        await connection.close()
