"""read_all on the cluster: the late-committer tests of one server, with the writer held
open on one worker and the reader following the whole log and one tenant.

The order is the coordinator's transaction ids (docs/decisions/storage.md, "Citus"): a writer held
open through the coordinator holds back every reader, of its tenant or any other, on any
worker, until it ends; when it commits it comes first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from eventlog import EventLog, open_log
from projections import compare_views
from tests.citus import cluster
from tests.conftest import fresh_id
from tests.events import Noted
from tests.procs.settle import settle
from tests.test_postgres_log_order import raw_insert, read_to_end

pytestmark = pytest.mark.citus


@pytest.fixture
async def citus_log(distributed_schema: str) -> AsyncIterator[EventLog]:
    """A distributed log in an empty distributed schema on the cluster."""
    async with open_log(cluster.URL, schema=distributed_schema, distributed=True) as log:
        yield log


async def worker_of(schema: str, tenant: str) -> str:
    """The worker (host:port) holding ``tenant``'s events shard."""
    connection = await asyncpg.connect(cluster.BASE_URL)
    try:
        row = await connection.fetchrow(
            "SELECT nodename, nodeport FROM pg_dist_shard_placement WHERE shardid = "
            "get_shard_id_for_distribution_column($1::regclass, $2::text)",
            f'"{schema}".events', tenant)
    finally:
        await connection.close()
    return f"{row[0]}:{row[1]}"


async def tenants_on_two_workers(schema: str) -> tuple[str, str]:
    """Two tenant ids whose shards are on different workers."""
    first = fresh_id("a")
    where = await worker_of(schema, first)
    for _ in range(100):
        other = fresh_id("b")
        if await worker_of(schema, other) != where:
            return first, other
    raise AssertionError("every tenant landed on one worker")


async def test_a_writer_held_on_one_worker_holds_back_the_whole_log_read(
    citus_log: EventLog, distributed_schema: str
) -> None:
    """Commits of another tenant on the other worker stay invisible behind the open writer;
    at its commit it comes first, and nothing is skipped."""
    held_tenant, other = await tenants_on_two_workers(distributed_schema)
    await citus_log.append(other, "before", [Noted(text="before")])
    await settle(citus_log)
    _, cursor = await read_to_end(citus_log)
    held = await asyncpg.connect(cluster.BASE_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, distributed_schema, held_tenant, "held", 1, "held")
        for n in range(3):
            await citus_log.append(other, f"later-{n}", [Noted(text=f"later-{n}")])
        hidden = await citus_log.read_all(after=cursor)
        await transaction.commit()
    finally:
        await held.close()
    assert ([], cursor) == (hidden.events, hidden.cursor)
    await settle(citus_log)
    shown, _ = await read_to_end(citus_log, cursor)
    assert ["held", "later-0", "later-1", "later-2"] == [event.stream_id for event in shown]
    assert (True, []) == ((await citus_log.verify()).ok, await compare_views(citus_log))


async def test_a_held_writer_that_rolls_back_is_never_seen(
    citus_log: EventLog, distributed_schema: str
) -> None:
    """A writer held open and rolled back releases the reader and leaves no trace."""
    held_tenant, other = await tenants_on_two_workers(distributed_schema)
    held = await asyncpg.connect(cluster.BASE_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, distributed_schema, held_tenant, "held", 1, "held")
        await citus_log.append(other, "later", [Noted(text="later")])
        hidden = await citus_log.read_all()
        await transaction.rollback()
    finally:
        await held.close()
    await settle(citus_log)
    shown, _ = await read_to_end(citus_log, hidden.cursor)
    assert ([], ["later"]) == (hidden.events, [event.stream_id for event in shown])
    assert [] == [event async for event in citus_log.read_stream(held_tenant, "held")]


async def test_a_tenant_follower_is_gap_safe_on_its_worker(
    citus_log: EventLog, distributed_schema: str
) -> None:
    """read_all(tenant_id=...) waits behind an open writer of its tenant, and its cursor,
    taken while the writer was open, still delivers the late commit."""
    tenant = fresh_id("t")
    held = await asyncpg.connect(cluster.BASE_URL)
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, distributed_schema, tenant, "held", 1, "held")
        await citus_log.append(tenant, "later", [Noted(text="later")])
        hidden = await citus_log.read_all(tenant_id=tenant)
        await transaction.commit()
    finally:
        await held.close()
    await settle(citus_log)
    page = await citus_log.read_all(after=hidden.cursor, tenant_id=tenant)
    assert ([], ["held", "later"]) == (hidden.events, [event.stream_id for event in page.events])


async def test_the_writer_id_is_the_coordinators(
        citus_log: EventLog, distributed_schema: str) -> None:
    """Every row carries the id of the coordinator's transaction that wrote it, which the
    coordinator's horizon counts: a row is tagged with an id the coordinator has seen end,
    not with one from a worker's own numbering."""
    tenant = fresh_id("t")
    coordinator = await asyncpg.connect(cluster.BASE_URL)
    try:
        before = int(await coordinator.fetchval("SELECT pg_current_xact_id()::text"))
        await citus_log.append(tenant, "s", [Noted(text="x")])
        after = int(await coordinator.fetchval("SELECT pg_current_xact_id()::text"))
        tagged = int(await coordinator.fetchval(
            f'SELECT tx_id::text FROM "{distributed_schema}".events WHERE tenant_id = $1', tenant))
        status = await coordinator.fetchval("SELECT pg_xact_status($1::text::xid8)",
                                            str(tagged))
    finally:
        await coordinator.close()
    assert before < tagged < after
    assert "committed" == status
