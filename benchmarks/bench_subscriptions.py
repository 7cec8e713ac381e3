"""Durable consumers (issue 34): delivery through a consumer that acks every 100 events
beside plain `read_all` paging over the same events, and a PostgreSQL append with the
wake-up trigger (``pg_notify`` in the append's transaction) beside one without it.

Both on the test PostgreSQL server, in scratch schemas. Delivery: a log of `EVENTS` events
is read to the end by a new consumer (``subscribe``, ``next_batch(100)``, ``ack`` of each
batch's last event: one UPDATE per 100 events) and by `read_all` pages of 500 (what a
caller keeping its own cursor does), in interleaved rounds. Append: single-event appends
to five logs (trigger disabled or enabled; nobody listening, a consumer that sleeps and
never reads, or a consumer following), each in an empty schema of its own, taking turns
every `BLOCK` appends in a shuffled order over `APPEND_ROUNDS` rounds (see `_append`).
Caveat: the server is shared with other work on this machine; ratios are what carry over.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import Awaitable, Callable

import asyncpg

from benchmarks.common import (
    PG_URL,
    Results,
    interleave,
    rounds,
    scratch_schema,
    section,
    size,
)
from eventlog import EventLog, Subscription, open_log
from eventlog.storage.pgconsumers import channel_name
from eventlog.testing.events import Noted

EVENTS = int(os.environ.get("BENCH_SUBSCRIPTION_EVENTS", 0)) or size(5_000, 300)
"""Events delivered per contestant (``BENCH_SUBSCRIPTION_EVENTS`` overrides)."""
FOLLOWED = size(2_000, 50)
"""Appends made while a consumer follows (`_following`)."""
BLOCK = size(100, 30)
APPEND_ROUNDS = size(20, 3)
"""Rounds of the append comparison, each contestant in a shuffled order: the trigger's
cost (~6 µs of server time a statement when nobody listens) is far below the drift of
blocks of appends on this machine (±30 %), so the figure needs many short rounds."""


async def run(results: Results) -> None:
    section("subscriptions: delivery with acks every 100, and append with pg_notify")
    async with scratch_schema() as schema, open_log(PG_URL, schema=schema) as log:
        for start in range(0, EVENTS, 10):  # ten events per append, fifty streams
            await log.append("t", f"s{start // 10 % 50}", [
                Noted(text=str(number)) for number in range(start, min(EVENTS, start + 10))])
        await log.wait_readable()
        await _delivery(results, log)
        await _append(results, log, schema)
        await _following(results, schema)


async def _delivery(results: Results, log: EventLog) -> None:
    """A new consumer reads the log to the end beside `read_all` paging, in alternating
    order each round. The consumer's opening (its claim, and on PostgreSQL its listening
    connection: a connect, LISTEN, the lock) is a fixed cost per subscription, timed and
    printed apart from the delivery rate."""
    figures: dict[str, list[float]] = {"consumer": [], "read_all": []}
    openings: list[float] = []

    async def consumer(number: int) -> None:
        began = time.perf_counter()
        async with log.subscribe(f"bench-{number}", poll_interval=1.0) as sub:
            openings.append(time.perf_counter() - began)
            began, seen = time.perf_counter(), 0
            while seen < EVENTS:
                batch = await sub.next_batch(100)
                seen += len(batch)
                await sub.ack(batch[-1])
            figures["consumer"].append(EVENTS / (time.perf_counter() - began))

    async def paging() -> None:
        began, cursor, seen = time.perf_counter(), None, 0
        while seen < EVENTS:
            page = await log.read_all(after=cursor, limit=500)
            seen += len(page.events)
            cursor = page.cursor
        figures["read_all"].append(EVENTS / (time.perf_counter() - began))

    for number in range(rounds()):
        if number % 2:
            await paging()
            await consumer(number)
        else:
            await consumer(number)
            await paging()
    results.compare("consumer delivery (ack every 100) vs read_all paging", "consumer",
                    "read_all", figures, unit="events/s", goal="≥ 0.5×", at_least=0.5)
    print(f"    opening a consumer (claim, listening connection): "
          f"{statistics.median(openings) * 1000:.1f} ms median")


async def _append(results: Results, log: EventLog, schema: str) -> None:
    """The same single-event appends to five logs taking turns, each in an empty schema of
    its own made the same way (so none pays for bigger tables than another).

    Nobody reading: one log whose trigger is disabled (the baseline), one whose trigger
    runs and finds nobody listening, and one whose consumer holds its listening lock and
    never reads (every append notifies: the floor, what NOTIFY costs each append when
    every one has a sleeping consumer to wake, as sparse appends do). A consumer following
    (on the writer's own log object, so the log's in-process wake-ups wake both alike,
    reading and acking batches of up to 100 in a task of its own): one log with the trigger
    disabled, one with it enabled, where the consumer gives the lock up when woken and
    lingers while the appends keep coming (`eventlog.log._waiting.LINGER`)."""
    names = {arm: f"{schema}_{arm}" for arm in ("quiet", "nobody", "idle", "quiet_f", "heard")}
    followers: list[asyncio.Task[None]] = []

    async def follow(sub: Subscription) -> None:
        while True:
            batch = await sub.next_batch(100)
            await sub.ack(batch[-1])

    try:
        async with contextlib.AsyncExitStack() as stack:
            logs = {arm: await stack.enter_async_context(open_log(PG_URL, schema=name))
                    for arm, name in names.items()}
            idle = await stack.enter_async_context(logs["idle"].subscribe(
                "listening", start="end", poll_interval=60.0))
            assert idle.pushed, "the idle consumer should be listening"
            for arm in ("quiet_f", "heard"):
                sub = await stack.enter_async_context(logs[arm].subscribe(
                    "following", start="end", poll_interval=5.0))
                assert sub.pushed, "the consumer should be listening"
                followers.append(asyncio.create_task(follow(sub)))
            connection = await asyncpg.connect(PG_URL)
            try:
                for arm in ("quiet", "quiet_f"):
                    await connection.execute(
                        f'ALTER TABLE "{names[arm]}".events DISABLE TRIGGER events_notify')
            finally:
                await connection.close()

            def appending(arm: str) -> Callable[[int], Awaitable[object]]:
                return lambda n: logs[arm].append("t", f"a{n % 20}", [Noted(text="x")])

            figures = await interleave(
                BLOCK, shuffled=True, times=APPEND_ROUNDS,
                without_notify=appending("quiet"), nobody_listening=appending("nobody"),
                consumer_never_reading=appending("idle"),
                without_notify_consumer_following=appending("quiet_f"),
                with_notify_consumer_following=appending("heard"))
            for task in followers:
                task.cancel()
            await asyncio.gather(*followers, return_exceptions=True)
    finally:
        connection = await asyncpg.connect(PG_URL)
        for name in names.values():
            await connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        await connection.close()
    results.compare("append with notify vs without, nobody listening", "nobody_listening",
                    "without_notify", figures, unit="appends/s", goal="≥ 0.95×",
                    at_least=0.95)
    results.compare("append with notify vs without, one consumer following",
                    "with_notify_consumer_following", "without_notify_consumer_following",
                    figures, unit="appends/s", goal="≥ 0.95×", at_least=0.95)
    results.compare("append notifying a sleeping consumer every time vs without (floor)",
                    "consumer_never_reading", "without_notify", figures, unit="appends/s")


async def _following(results: Results, schema: str) -> None:
    """How many of `FOLLOWED` back-to-back appends send a notification while a consumer
    follows them (reading and acking batches of up to 100): it holds the listening lock
    only while it waits, so an append made while it reads notifies nobody. Counted by a
    bare LISTEN that holds no lock."""
    followed = f"{schema}_followed"
    heard: list[str] = []
    seen = 0
    try:
        async with open_log(PG_URL, schema=followed) as writer, \
                open_log(PG_URL, schema=followed) as reader, \
                reader.subscribe("following", start="end", poll_interval=5.0) as sub:
            ears = await asyncpg.connect(PG_URL)
            await ears.add_listener(channel_name(followed), lambda *args: heard.append(args[3]))

            async def follow() -> None:
                nonlocal seen
                while seen < FOLLOWED:
                    batch = await sub.next_batch(100)
                    seen += len(batch)
                    await sub.ack(batch[-1])

            following = asyncio.create_task(follow())
            for number in range(FOLLOWED):
                await writer.append("t", f"a{number % 20}", [Noted(text="x")])
            await asyncio.wait_for(following, 60)
            await asyncio.sleep(0.2)
            await ears.close()
    finally:
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'DROP SCHEMA IF EXISTS "{followed}" CASCADE')
        await connection.close()
    share = len(heard) / FOLLOWED
    print(f"    appends that notified while one consumer followed: {len(heard)} of "
          f"{FOLLOWED} ({share:.2f}; every one while it waits idle)")
    results.notes["notified_share_while_following"] = share
