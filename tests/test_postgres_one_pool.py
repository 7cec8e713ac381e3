"""PostgreSQL holds ONE pool of connections: never more than ``pool_size`` at once, whatever
mix of appends (one-statement and transactional), view queries and log reads runs, and
none after close. Counted on the server (pg_stat_activity, by a unique application_name
given in the URL, which asyncpg passes to the server), not from our own bookkeeping.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import EventLog, InvalidInput, StreamAppend, open_log
from eventlog.checkpoints import CheckpointRecord
from tests.conftest import PG_URL
from tests.events import Noted

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")
POOL_SIZE = 3


async def connections_named(name: str) -> int:
    """How many server connections carry ``name`` as their application_name now."""
    connection = await asyncpg.connect(PG_URL)
    try:
        count: int = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name)
        return count
    finally:
        await connection.close()


async def most_connections_during(name: str, work: Callable[[], Awaitable[None]]) -> int:
    """The largest number of connections named ``name`` seen while ``work`` runs."""
    seen = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal seen
        while not done.is_set():
            seen = max(seen, await connections_named(name))
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    try:
        await work()
    finally:
        done.set()
        await watcher
    return seen


async def mixed_load(log: EventLog, rounds: int = 6) -> None:
    """Every kind of statement at once: creates (one statement), session deletes (blob
    releases take the transactional path), batched appends, view queries, stream and log
    reads, and verify's scan and count."""

    async def session(number: int) -> None:
        for step in range(rounds):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{number}", run_id=RUN, step=step,
                checkpoint_id=f"c{step}", state={"shared": number % 2, "step": step}))
            await log.checkpoints.list("t", f"s{number}")
        assert rounds == await log.checkpoints.delete("t", f"s{number}")

    async def reader() -> None:
        for _ in range(rounds):
            await log.append_batch([StreamAppend(tenant_id="t", stream_id=f"b{n}",
                                                 events=[Noted(text="x")]) for n in range(3)])
            [event async for event in log.read_stream("t", "b0")]
            await log.read_all(limit=50)
            assert (await log.verify()).ok

    await asyncio.gather(*(session(n) for n in range(4 * POOL_SIZE)),
                         *(reader() for _ in range(POOL_SIZE)))


async def test_a_log_never_holds_more_than_its_pool(pg_schema: str) -> None:
    """Under a load that keeps every path busy, the server sees at most ``pool_size``
    connections of ours; and after close, none."""
    name = f"eventlog-pool-{uuid.uuid4().hex[:10]}"
    url = f"{PG_URL}?application_name={name}"
    async with open_log(url, schema=pg_schema, pool_size=POOL_SIZE) as log:
        most = await most_connections_during(name, lambda: mixed_load(log))
    assert 0 < most <= POOL_SIZE
    assert 0 == await connections_named(name)


async def test_libpq_parameters_in_the_url_reach_the_server(pg_schema: str) -> None:
    """The URL's query parameters go to the server as asyncpg reads them, on opening (the
    schema check) and after: SQLAlchemy's own URL handling once refused them."""
    name = f"eventlog-url-{uuid.uuid4().hex[:10]}"
    async with open_log(f"{PG_URL}?application_name={name}", schema=pg_schema) as log:
        await log.append("t", "s", [Noted(text="x")])
        assert 1 == await connections_named(name)


async def test_over_an_application_engine_the_log_uses_only_its_pool(pg_schema: str) -> None:
    """Given an engine, every statement borrows the engine's connections: no pool of ours."""
    name = f"eventlog-app-{uuid.uuid4().hex[:10]}"
    engine = create_async_engine(
        "postgresql+asyncpg://", pool_size=2, max_overflow=0,
        async_creator=lambda: asyncpg.connect(PG_URL, server_settings={"application_name": name}),
    )
    try:
        async with open_log(engine, schema=pg_schema) as log:
            most = await most_connections_during(name, lambda: mixed_load(log, rounds=3))
            assert getattr(log.storage, "_pool", "missing") is None
        assert 0 < most <= 2
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        await engine.dispose()


async def test_a_replica_is_asked_how_far_it_replayed_before_it_opens(pg_schema: str) -> None:
    """open_log with read_url waits for the replica to replay the primary's schema before
    opening it: the reader's pool answers before `open` (here the server is its own
    replica, which has replayed everything)."""
    async with open_log(PG_URL, schema=pg_schema, read_url=PG_URL) as log:
        await log.append("t", "s", [Noted(text="x")])
        assert ["x"] == [event.event.text async for event in log.read_stream("t", "s")]


@pytest.mark.parametrize("pool_size", [0, -1, 1001, "3", 2.5, True, None])
async def test_a_pool_size_that_is_not_a_whole_number_from_1_is_refused(
    pool_size: object, pg_schema: str
) -> None:
    """A pool of no connections would wait forever: refused at open, naming the option,
    and nothing is created."""
    with pytest.raises(InvalidInput, match="pool_size"):
        async with open_log(PG_URL, schema=pg_schema, pool_size=pool_size):
            pass
    connection = await asyncpg.connect(PG_URL)
    try:
        assert not await connection.fetchval(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1", pg_schema)
    finally:
        await connection.close()
