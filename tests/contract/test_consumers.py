"""Durable consumers on every backend (issue 34): positions stored by ack, resumed after a
reopen, filters, starts, one holder at a time with fencing, projections whose writes share
the position's transaction, reset, drop, lag, and in-process wake-ups."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from eventlog import (
    ConsumerFenced,
    ConsumerHeld,
    ConsumerScopeChanged,
    EventLog,
    InvalidInput,
    UnknownConsumer,
    open_log,
)
from eventlog.records import RecordedEvent
from tests.conftest import BACKENDS, CITUS, PGBOUNCER, BackendTarget
from tests.events import Holding, Noted

EVERY = [*BACKENDS, PGBOUNCER, CITUS]
pytestmark = pytest.mark.parametrize("target", EVERY, indirect=True)


async def take(subscription: Any, count: int) -> list[RecordedEvent]:
    """The next ``count`` events of a subscription (failing after 20 s)."""
    async def read() -> list[RecordedEvent]:
        return [event for event in await subscription.next_batch(count)]
    taken: list[RecordedEvent] = []
    while len(taken) < count:
        taken += await asyncio.wait_for(subscription.next_batch(count - len(taken)), 20)
    return taken


async def note(log: EventLog, *texts: str, tenant: str = "t", stream: str = "s") -> None:
    for text in texts:
        await log.append(tenant, stream, [Noted(text=text)])
    # Readable before the test reads: on a server another test's open transaction holds
    # the read horizon back (on Citus the xdist workers share one cluster), and a read
    # with ``until_idle`` would otherwise find the log idle.
    await log.wait_readable()


def texts(events: list[RecordedEvent]) -> list[str]:
    return [event.event.text for event in events]  # type: ignore[attr-defined]


async def test_resumes_after_the_last_ack(log: EventLog) -> None:
    """Reopened, a consumer redelivers what it had not acknowledged, and nothing before."""
    await note(log, "a", "b", "c", "d")
    async with log.subscribe("c", poll_interval=0.1) as sub:
        first = await take(sub, 3)
        await sub.ack(first[1])
    async with log.subscribe("c", poll_interval=0.1) as sub:
        again = await take(sub, 2)
    assert (["a", "b", "c"], ["c", "d"]) == (texts(first), texts(again))


async def test_delivers_in_log_order_across_streams(log: EventLog) -> None:
    """Events of several streams come in `read_all` order, each once."""
    for number in range(12):
        await log.append("t", f"s{number % 3}", [Noted(text=str(number))])
    await log.wait_readable()
    page = await log.read_all(limit=100)
    async with log.subscribe("c", poll_interval=0.1) as sub:
        delivered = await take(sub, 12)
    assert [e.event_id for e in page.events] == [e.event_id for e in delivered]


async def test_tenant_filter_is_a_wall(log: EventLog) -> None:
    """A consumer of one tenant never sees another tenant's events."""
    await note(log, "mine-1", tenant="t1")
    await note(log, "theirs", tenant="t2")
    await note(log, "mine-2", tenant="t1")
    async with log.subscribe("c", tenant_id="t1", poll_interval=0.1) as sub:
        delivered = await take(sub, 2)
        assert [] == await sub.next_batch(10, wait=False)
    assert ["mine-1", "mine-2"] == texts(delivered)


async def test_types_filter_and_its_ack_covers_the_skipped(log: EventLog) -> None:
    """Only the named types are delivered; a reopened consumer re-reads none of the
    skipped events after its ack, and an idle one stores the cursor past them."""
    await log.append("t", "s", [Noted(text="n1")])
    await log.append("t", "h", [Holding(text="h1")])
    await log.append("t", "s", [Noted(text="n2")])
    async with log.subscribe("c", types=["test.holding"], poll_interval=0.1) as sub:
        (only,) = await take(sub, 1)
        await sub.ack(only)
        assert [] == await sub.next_batch(10, wait=False)
    await log.append("t", "s", [Noted(text="n3")])
    await log.wait_readable()
    async with log.subscribe("c", types=["test.holding"], poll_interval=0.1) as sub:
        assert [] == await sub.next_batch(10, wait=False)
        await sub._settle_idle()
    await log.wait_readable()
    end = (await log.read_all(limit=100)).cursor
    (info,) = await log.consumers()
    assert ("h1", end, 0) == (only.event.text, info.cursor, info.lag_events)  # type: ignore[attr-defined]


async def test_start_at_end_and_at_a_cursor(log: EventLog) -> None:
    """A new consumer started at the end sees only later events; at a cursor, what follows."""
    await note(log, "old-1", "old-2")
    await log.wait_readable()
    cursor = (await log.read_all(limit=1)).cursor
    assert cursor is not None
    async with log.subscribe("end", start="end", poll_interval=0.1) as sub:
        assert [] == await sub.next_batch(10, wait=False)
        await note(log, "new")
        assert ["new"] == texts(await take(sub, 1))
    async with log.subscribe("mid", start=cursor, poll_interval=0.1) as sub:
        assert ["old-2", "new"] == texts(await take(sub, 2))


async def test_a_second_holder_is_refused_then_waits(log: EventLog) -> None:
    """While one holder holds a consumer a second opener is refused, naming the holder;
    with wait=True it gets the consumer once the first lets go."""
    await note(log, "a")
    async with log.subscribe("c", holder="first", poll_interval=0.05) as sub:
        with pytest.raises(ConsumerHeld) as refused:
            async with log.subscribe("c", holder="second"):
                pass
        assert "first" == refused.value.holder
        assert "'first'" in str(refused.value)

        async def second() -> list[str]:
            async with log.subscribe("c", holder="second", wait=True,
                                     poll_interval=0.05) as other:
                return texts(await take(other, 1))

        waiting = asyncio.create_task(second())
        await asyncio.sleep(0.3)
        assert not waiting.done()
    assert ["a"] == await asyncio.wait_for(waiting, 20)
    assert sub.token < (await log.consumers())[0].token


async def test_a_lapsed_holder_is_fenced(target: BackendTarget) -> None:
    """Once a holder's lease lapses another takes over; the first one's ack is refused
    and it hands out no more events."""
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    async with target.open(clock=lambda: now[0]) as log:
        await note(log, "a", "b", "c")
        async with log.subscribe("c", lease=60, holder="old", poll_interval=0.1) as old:
            (first,) = await take(old, 1)
            now[0] += timedelta(seconds=61)
            async with log.subscribe("c", lease=60, holder="new", poll_interval=0.1) as new:
                with pytest.raises(ConsumerFenced):
                    await old.ack(first)
                old._renewed -= 3600  # its lease is due: the next delivery checks it
                with pytest.raises(ConsumerFenced):
                    await old.next_batch(1)
                assert ["a", "b", "c"] == texts(await take(new, 3))
                (info,) = await log.consumers()
                assert ("new", new.token) == (info.holder, info.token)


async def test_another_scope_is_refused(log: EventLog) -> None:
    """A consumer reopened with another tenant or types is refused, naming both."""
    async with log.subscribe("c", tenant_id="t1"):
        pass
    with pytest.raises(ConsumerScopeChanged, match="tenant 't1'"):
        async with log.subscribe("c", tenant_id="t2"):
            pass
    with pytest.raises(ConsumerScopeChanged):
        async with log.subscribe("c", tenant_id="t1", types=["test.noted"]):
            pass


async def test_bad_arguments_are_refused(log: EventLog) -> None:
    """Bad names, intervals, types and acks are refused with the field named."""
    for field, call in [
        ("name", lambda: log.subscribe("")),
        ("poll_interval", lambda: log.subscribe("c", poll_interval=0)),
        ("lease", lambda: log.subscribe("c", lease=-1)),
        ("types", lambda: log.subscribe("c", types="test.noted")),
        ("types", lambda: log.subscribe("c", types=[])),
        ("start", lambda: log.subscribe("c", start="")),
    ]:
        with pytest.raises(InvalidInput) as refused:
            call()
        assert field == refused.value.field
    with pytest.raises(InvalidInput):
        async with log.subscribe("c", start="p:nonsense"):
            pass
    await note(log, "a")
    async with log.subscribe("c", poll_interval=0.1) as sub:
        (event,) = await take(sub, 1)
        await sub.ack(event)
        with pytest.raises(InvalidInput, match="already acknowledged"):
            await sub.ack(event)


async def test_in_process_appends_wake_a_subscriber_at_once(log: EventLog) -> None:
    """An append of the same log wakes a waiting subscriber long before its poll."""
    async with log.subscribe("c", poll_interval=600) as sub:
        waiting = asyncio.create_task(sub.next_batch(1))
        await asyncio.sleep(0.2)
        await note(log, "wake")
        assert ["wake"] == texts(await asyncio.wait_for(waiting, 20))


async def test_reset_replays_and_fences_the_holder(log: EventLog) -> None:
    """A reset moves the position and fences the holder; drop forgets the consumer."""
    await note(log, "a", "b")
    async with log.subscribe("c", poll_interval=0.1) as sub:
        events = await take(sub, 2)
        await sub.ack(events[0])
        await log.reset_consumer("c", "beginning")
        with pytest.raises(ConsumerFenced):
            await sub.ack(events[-1])
    async with log.subscribe("c", poll_interval=0.1) as sub:
        assert ["a", "b"] == texts(await take(sub, 2))
    await log.reset_consumer("c", "end")
    async with log.subscribe("c", poll_interval=0.1) as sub:
        assert [] == await sub.next_batch(5, wait=False)
    await log.drop_consumer("c")
    assert [] == await log.consumers()
    with pytest.raises(UnknownConsumer):
        await log.reset_consumer("c")
    with pytest.raises(UnknownConsumer):
        await log.drop_consumer("c")


async def test_consumers_report_scope_position_lag_and_holder(log: EventLog) -> None:
    """`consumers` lists each consumer with its lag in events and its holder."""
    await note(log, "a", "b", "c")
    async with log.subscribe("billing", tenant_id="t", poll_interval=0.1,
                             holder="worker-1") as sub:
        first = await take(sub, 1)
        await sub.ack(first[0])
        (held,) = await log.consumers()
    (released,) = await log.consumers()
    assert ("billing", "t", 2, "worker-1") == (held.name, held.tenant_id, held.lag_events,
                                               held.holder)
    assert held.lag_seconds >= 0
    assert released.holder is None


async def test_projection_writes_commit_with_the_position(log: EventLog) -> None:
    """A projection's handler writes and its position commit together; a handler that
    raises rolls its batch back, and the batch is delivered again."""
    sql = log.backend_name in ("sqlite", "postgresql")
    table = await own_table(log) if sql else None
    kept: list[str] = []

    async def handler(event: RecordedEvent, connection: Any) -> None:
        text = event.event.text  # type: ignore[attr-defined]
        if text == "boom" and not failed:
            failed.append(True)
            raise RuntimeError("boom")
        await write_own(log, table, connection, text, kept)

    failed: list[bool] = []
    await note(log, "a", "b")
    assert 2 == await log.project("p", handler, until_idle=True, poll_interval=0.1)
    await note(log, "c", "boom")
    with pytest.raises(RuntimeError):
        await log.project("p", handler, until_idle=True, poll_interval=0.1)
    assert 2 == await log.project("p", handler, until_idle=True, poll_interval=0.1)
    rows = await read_own(log, table) if sql else list(dict.fromkeys(kept))
    assert ["a", "b", "c", "boom"] == rows  # in memory: at-least-once, "c" twice


async def own_table(log: EventLog) -> str:
    """A user table beside the log (dropped with the test's schema or file)."""
    if log.backend_name == "sqlite":
        storage: Any = log.storage
        async with storage.engine.begin() as connection:
            await connection.execute(sa.text("CREATE TABLE own (n INTEGER PRIMARY KEY "
                                             "AUTOINCREMENT, text TEXT)"))
        return "own"
    schema = log.storage.schema  # type: ignore[attr-defined]
    async with log.storage.driver_connection() as driver:  # type: ignore[attr-defined]
        await driver.execute(f'CREATE TABLE "{schema}".own (n serial PRIMARY KEY, text text)')
    return f'"{schema}".own'


async def write_own(log: EventLog, table: str | None, connection: Any, text: str,
                    kept: list[str]) -> None:
    if table is None:
        assert connection is None
        kept.append(text)
    elif log.backend_name == "sqlite":
        await connection.execute(sa.text(f"INSERT INTO {table} (text) VALUES (:t)"), {"t": text})
    else:
        await connection.execute(f"INSERT INTO {table} (text) VALUES ($1)", text)


async def read_own(log: EventLog, table: str | None) -> list[str]:
    if log.backend_name == "sqlite":
        async with log.storage.engine.connect() as connection:  # type: ignore[attr-defined]
            rows = await connection.execute(sa.text(f"SELECT text FROM {table} ORDER BY n"))
            return [str(row[0]) for row in rows]
    async with log.storage.driver_connection() as driver:  # type: ignore[attr-defined]
        return [str(row[0]) for row in await driver.fetch(f"SELECT text FROM {table} ORDER BY n")]


async def test_positions_survive_reopening_the_log(target: BackendTarget) -> None:
    """A consumer's position is in the log's own storage: a new open_log resumes it."""
    if target.name == "memory":
        pytest.skip("memory:// is a new log each time it opens")
    async with target.open() as log:
        await note(log, "a", "b")
        async with log.subscribe("c", poll_interval=0.1) as sub:
            (first,) = await take(sub, 1)
            await sub.ack(first)
    async with open_log(target.url, **target.options()) as log, log.subscribe(
            "c", poll_interval=0.1) as sub:
        assert ["b"] == texts(await take(sub, 1))
