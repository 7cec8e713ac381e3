"""PostgreSQL: concurrent writers, rolled-back transactions and a reader following read_all.

The log's order on PostgreSQL is (writer transaction id, position), and read_all only
returns rows written by transactions older than every transaction still running. These
tests prove what that promises: a follower sees every committed event exactly once, in an
order that never changes, never a rolled-back one, and a transaction held open holds the
reader back until it ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import msgspec
import pytest

from eventlog import EventLog, RecordedEvent, open_log
from eventlog.hashing import GENESIS_HASH, event_hash
from projections import compare_views
from tests.conftest import PG_URL, PGBOUNCER, fresh_id
from tests.events import Noted
from tests.pg_worker_db import with_database
from tests.procs.settle import settle

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parent.parent
STREAMS = ("s0", "s1", "s2")


@pytest.fixture(params=["postgresql", PGBOUNCER])
def reader_url(request: pytest.FixtureRequest) -> str:
    """Where the log under test reads (and appends): the server, or the server through
    PgBouncer in transaction mode (``-m pgbouncer``), where each gap-safe read must take
    its horizon and its rows in one transaction. The other writers reach the server."""
    url: str = (request.getfixturevalue("pgbouncer_url") if request.param == "pgbouncer"
                else PG_URL)
    return url


@pytest.fixture
async def pg_log(reader_url: str, pg_schema: str) -> AsyncIterator[EventLog]:
    """A log in a fresh PostgreSQL schema."""
    async with open_log(reader_url, schema=pg_schema) as log:
        yield log


async def read_to_end(log: EventLog, cursor: str | None = None,
                      limit: int = 1000) -> tuple[list[RecordedEvent], str | None]:
    """Follow read_all from ``cursor`` until an empty page."""
    events: list[RecordedEvent] = []
    while True:
        page = await log.read_all(after=cursor, limit=limit)
        if not page.events:
            return events, cursor
        events.extend(page.events)
        cursor = page.cursor


async def raw_insert(connection: asyncpg.Connection, schema: str, tenant: str, stream: str,
                     version: int, text: str, prev_hash: bytes = GENESIS_HASH) -> int:
    """Insert one well-formed event row (and its stream head) on ``connection``."""
    position, digest, now = await raw_event_insert(connection, schema, tenant, stream, version,
                                                   text, prev_hash)
    await connection.execute(
        f'INSERT INTO "{schema}".stream_heads (tenant_id, stream_id, version, head_hash, '
        "last_position, updated_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, "
        "stream_id) DO UPDATE SET version = EXCLUDED.version, head_hash = EXCLUDED.head_hash, "
        "last_position = EXCLUDED.last_position, updated_at = EXCLUDED.updated_at",
        tenant, stream, version, digest, position, now,
    )
    return position


async def raw_event_insert(
    connection: asyncpg.Connection, schema: str, tenant: str, stream: str, version: int,
    text: str, prev_hash: bytes = GENESIS_HASH,
) -> tuple[int, bytes, datetime]:
    """Insert one well-formed event row alone; its position, hash and time."""
    event_id, now = uuid.uuid4(), datetime.now(UTC)
    data = msgspec.json.encode(Noted(text=text))
    digest = event_hash(tenant_id=tenant, stream_id=stream, version=version, event_id=event_id,
                        type="test.noted", recorded_at=now, data=data, prev_hash=prev_hash)
    position: int = await connection.fetchval(
        f'INSERT INTO "{schema}".events (tenant_id, stream_id, stream_version, event_id, type, '
        "data, recorded_at, prev_hash, hash) VALUES ($1, $2, $3, $4, 'test.noted', $5, $6, $7, "
        "$8) RETURNING position",
        tenant, stream, version, event_id, data, now, prev_hash, digest,
    )
    return position, digest, now


async def in_process_writer(schema: str, tenant: str, count: int) -> list[str]:
    """Append ``count`` events over its own log (own connections); their texts."""
    texts = []
    async with open_log(PG_URL, schema=schema) as log:
        for number in range(count):
            text = f"{tenant}:{number}"
            await log.append(tenant, STREAMS[number % 3], [Noted(text=text)])
            texts.append(text)
            await asyncio.sleep(0)
    return texts


async def process_writer(schema: str, tenant: str, count: int) -> list[str]:
    """Append ``count`` events from a child OS process; their texts."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.procs.writer", PG_URL, schema, tenant, ",".join(STREAMS),
        str(count), cwd=ROOT, stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    output, _ = await child.communicate()
    assert 0 == child.returncode
    lines = [json.loads(line) for line in output.splitlines()[1:]]
    assert count == len(lines)
    return [f"{tenant}:{number}" for number in range(1, count + 1)]


async def rolling_back_writer(schema: str, tenant: str, count: int) -> None:
    """Insert event rows in transactions that always roll back."""
    connection = await asyncpg.connect(PG_URL)
    try:
        for number in range(count):
            transaction = connection.transaction()
            await transaction.start()
            await raw_insert(connection, schema, tenant, STREAMS[number % 3],
                             1_000_000 + number, f"rolled-back:{number}")
            await asyncio.sleep(0.002)
            await transaction.rollback()
    finally:
        await connection.close()


async def follow(log: EventLog, done: asyncio.Event) -> list[RecordedEvent]:
    """Follow read_all in small pages until the writers are done, then drain."""
    seen: list[RecordedEvent] = []
    cursor: str | None = None
    while not done.is_set():
        page = await log.read_all(after=cursor, limit=7)
        seen.extend(page.events)
        cursor = page.cursor
        if not page.events:
            await asyncio.sleep(0.001)
    await settle(log)
    rest, _ = await read_to_end(log, cursor, limit=7)
    return seen + rest


async def test_follower_sees_every_committed_event_once_in_a_stable_order(
    pg_log: EventLog, pg_schema: str
) -> None:
    """8 writers (3 in-process logs, 2 child processes, 3 rolling back) and one follower."""
    done = asyncio.Event()
    reader = asyncio.create_task(follow(pg_log, done))
    writers = [
        *(in_process_writer(pg_schema, f"w{n}", 40) for n in range(3)),
        *(process_writer(pg_schema, f"p{n}", 40) for n in range(2)),
        *(rolling_back_writer(pg_schema, f"r{n}", 25) for n in range(3)),
    ]
    results = await asyncio.gather(*writers)
    done.set()
    seen = await reader
    committed = sorted(text for texts in results if texts for text in texts)
    seen_texts = [event.event.text for event in seen]  # type: ignore[attr-defined]
    assert committed == sorted(seen_texts)
    assert len(seen_texts) == len(set(seen_texts))
    again, _ = await read_to_end(pg_log)
    assert [event.event_id for event in seen] == [event.event_id for event in again]
    assert (True, []) == ((await pg_log.verify()).ok, await compare_views(pg_log))


async def test_follower_order_keeps_each_streams_versions_in_order(
    pg_log: EventLog, pg_schema: str
) -> None:
    """Within every stream, read_all order is version order, even with racing writers."""
    await asyncio.gather(*(in_process_writer(pg_schema, "shared", 30) for _ in range(4)))
    await settle(pg_log)
    events, _ = await read_to_end(pg_log, limit=5)
    for stream in STREAMS:
        versions = [event.version for event in events if event.stream_id == stream]
        assert list(range(1, len(versions) + 1)) == versions
    assert 120 == len(events)


async def waiting_on(connection: asyncpg.Connection) -> bool:
    """Whether some transaction waits for the one open on ``connection`` to end."""
    waiting: bool = await connection.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' "
        "AND NOT granted AND transactionid::text = pg_current_xact_id()::text)")
    return waiting


async def open_insert(schema: str, version: int, text: str) -> asyncpg.Connection:
    """A connection whose open transaction inserted the event row of s0 at ``version``."""
    connection = await asyncpg.connect(PG_URL)
    await connection.execute("BEGIN")
    await raw_event_insert(connection, schema, "t", "s0", version, text)
    return connection


async def until_waited_on(connection: asyncpg.Connection) -> None:
    """Return once a transaction waits on ``connection``'s."""
    for _ in range(2_000):
        if await waiting_on(connection):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("no transaction came to wait")


async def test_a_holder_that_lost_its_version_twice_is_read_after_the_winners(
    pg_log: EventLog, pg_schema: str
) -> None:
    """A holder of the stream whose reservation loses version 1 and then version 2 to
    appends committing first is read after both: it starts again with a new transaction
    id, where keeping the first would have ordered its version 3 before version 2."""
    first = await open_insert(pg_schema, 1, "first")
    second: asyncpg.Connection | None = None

    async def hold_and_append() -> None:
        async with pg_log.hold_stream("t", "s0"):
            await pg_log.append("t", "s0", [Noted(text="holder")])

    holder = asyncio.create_task(hold_and_append())
    try:
        await until_waited_on(first)  # the holder has its transaction id, and waits
        second = await open_insert(pg_schema, 2, "second")  # a later transaction id
        await first.execute("COMMIT")
        await until_waited_on(second)
        await second.execute("COMMIT")
        await holder
    finally:
        holder.cancel()
        for connection in (first, second):
            if connection is not None:
                await connection.close()
    await settle(pg_log)
    events, _ = await read_to_end(pg_log)
    assert [(1, "first"), (2, "second"), (3, "holder")] == [
        (event.version, event.event.text) for event in events]  # type: ignore[attr-defined]


async def test_held_transaction_holds_the_reader_back_until_it_commits(
    pg_log: EventLog, pg_schema: str
) -> None:
    """Later commits stay invisible behind an open writer; at commit it comes first."""
    await pg_log.append("t", "before", [Noted(text="before")])
    await settle(pg_log)
    _, cursor = await read_to_end(pg_log)
    held = await asyncpg.connect(PG_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        held_position = await raw_insert(held, pg_schema, "t", "held", 1, "held")
        later = [await pg_log.append("t", f"later-{n}", [Noted(text=f"later-{n}")])
                 for n in range(3)]
        hidden = await pg_log.read_all(after=cursor)
        await transaction.commit()
    finally:
        await held.close()
    assert ([], cursor) == (hidden.events, hidden.cursor)
    assert held_position < later[0].positions[0]
    await settle(pg_log)
    shown, _ = await read_to_end(pg_log, cursor)
    assert ["held", "later-0", "later-1", "later-2"] == [event.stream_id for event in shown]
    assert (True, []) == ((await pg_log.verify()).ok, await compare_views(pg_log))


async def test_held_transaction_that_rolls_back_is_never_seen(
    pg_log: EventLog, pg_schema: str
) -> None:
    """A writer held open and then rolled back releases the reader and leaves no trace."""
    await pg_log.append("t", "before", [Noted(text="before")])
    await settle(pg_log)
    _, cursor = await read_to_end(pg_log)
    held = await asyncpg.connect(PG_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, pg_schema, "t", "held", 1, "held")
        await pg_log.append("t", "later", [Noted(text="later")])
        hidden = await pg_log.read_all(after=cursor)
        await transaction.rollback()
    finally:
        await held.close()
    await settle(pg_log)
    shown, _ = await read_to_end(pg_log, cursor)
    assert [] == hidden.events
    assert ["later"] == [event.stream_id for event in shown]
    assert [] == [event async for event in pg_log.read_stream("t", "held")]


async def test_cursor_taken_before_a_held_commit_still_delivers_it(
    pg_log: EventLog, pg_schema: str
) -> None:
    """A follower that polled (with an empty page) while the writer was open gets its event."""
    held = await asyncpg.connect(PG_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, pg_schema, "t", "held", 1, "held")
        await pg_log.append("t", "later", [Noted(text="later")])
        polled = await pg_log.read_all()
        await transaction.commit()
    finally:
        await held.close()
    await settle(pg_log)
    shown, _ = await read_to_end(pg_log, polled.cursor)
    assert ([], ["held", "later"]) == (polled.events, [event.stream_id for event in shown])


async def test_tenant_follower_is_gap_safe_too(pg_log: EventLog, pg_schema: str) -> None:
    """read_all(tenant_id=...) waits behind an open writer of any tenant."""
    tenant = fresh_id("t")
    held = await asyncpg.connect(PG_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, pg_schema, tenant, "held", 1, "held")
        await pg_log.append(tenant, "later", [Noted(text="later")])
        hidden = await pg_log.read_all(tenant_id=tenant)
        await transaction.commit()
    finally:
        await held.close()
    await settle(pg_log)
    page = await pg_log.read_all(tenant_id=tenant)
    assert ([], ["held", "later"]) == (hidden.events, [event.stream_id for event in page.events])


async def other_database_churn(url: str, stop: asyncio.Event, ended: list[int]) -> None:
    """Transactions of the database at ``url`` (not the log's), each holding an id a few
    milliseconds, until ``stop``; counts them in ``ended``."""
    connection = await asyncpg.connect(url)
    try:
        while not stop.is_set():
            async with connection.transaction():
                await connection.fetchval("SELECT pg_current_xact_id()")
                await asyncio.sleep(0.001 + 0.003 * (ended[0] % 4) / 4)
            ended[0] += 1
    finally:
        await connection.close()


async def test_an_event_once_read_stays_readable_while_other_databases_commit(
    pg_log: EventLog,
) -> None:
    """The horizon counts a transaction whose backend it cannot find as ours: one of
    another database that ends between the statement's snapshot and its read of
    pg_stat_activity held the horizon back for that statement, so a read from the start
    showed fewer events than the read before it (96 of 900 reads, beside four connections
    of another database committing; the tree's heads then covered events `read_all` did
    not show). A backend's reads never go below the highest transaction it has read."""
    await reads_stay_readable(pg_log, with_database(PG_URL, "postgres"))


async def reads_stay_readable(log: EventLog, other_database: str) -> None:
    """Append 200 events, each read three times from the start (whole log and tenant)
    beside four connections of ``other_database`` committing: no read shows fewer events
    than one before it."""
    stop, ended = asyncio.Event(), [0]
    churn = [asyncio.create_task(other_database_churn(other_database, stop, ended))
             for _ in range(4)]
    tenant = fresh_id("t")
    fewer: list[tuple[int, int]] = []
    try:
        seen = seen_in_tenant = 0
        for number in range(200):
            await log.append(tenant, "s", [Noted(text=str(number))])
            for _ in range(3):
                in_tenant = len((await log.read_all(tenant_id=tenant)).events)
                everything = len((await log.read_all()).events)
                if in_tenant < seen_in_tenant or everything < seen:
                    fewer.append((number, in_tenant))
                seen, seen_in_tenant = max(seen, everything), max(seen_in_tenant, in_tenant)
    finally:
        stop.set()
        await asyncio.gather(*churn)
    assert ended[0] > 100, "the other database's transactions did not run"
    assert [] == fewer
