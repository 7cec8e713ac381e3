"""PostgreSQL: the transparency tree under concurrent writers (child processes and
in-process logs) and concurrent integrators, and a transaction held open.

A leaf's index is fixed only once its event is gap-safe readable: a head taken while a
writer's transaction is open stops before it, and every later head extends every earlier
one (checked with the independent RFC 9162 implementation)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from eventlog import EventLog, open_log
from tests.conftest import PG_URL
from tests.events import Noted
from tests.test_postgres_log_order import (
    in_process_writer,
    process_writer,
    raw_event_insert,
)
from tests.transparency import rfc9162

pytestmark = pytest.mark.postgres


async def tenant_leaves(log: EventLog, tenant: str) -> list[bytes]:
    hashes: list[bytes] = []
    cursor = None
    while True:
        page = await log.read_all(after=cursor, limit=1000, tenant_id=tenant)
        if not page.events:
            return hashes
        hashes += [event.hash for event in page.events]
        cursor = page.cursor


async def test_heads_taken_during_concurrent_writers_are_prefixes(pg_schema: str) -> None:
    """Two child processes and two in-process logs append to one tenant while three logs
    take heads; each head is the RFC root of a prefix of the final order, and the final
    tree proves every head consistent with it."""
    tenant = "t"
    heads: list[tuple[int, bytes]] = []
    async def header() -> None:
        async with open_log(PG_URL, schema=pg_schema) as log:
            for _ in range(25):
                head = await log.tree_head(tenant)
                heads.append((head.size, head.root))
                await asyncio.sleep(0.01)

    await asyncio.gather(process_writer(pg_schema, tenant, 40),
                         process_writer(pg_schema, tenant, 40),
                         in_process_writer(pg_schema, tenant, 30),
                         in_process_writer(pg_schema, tenant, 30), header(), header(), header())
    async with open_log(PG_URL, schema=pg_schema) as log:
        await log.wait_readable()
        final = await log.tree_head(tenant)
        data = await tenant_leaves(log, tenant)
        assert (140, rfc9162.mth(data)) == (final.size, final.root)
        for size, root in heads:
            assert rfc9162.mth(data[:size]) == root
            proof = await log.prove_consistency(tenant, size, final.size)
            assert rfc9162.consistency_ok(size, final.size, root, final.root, proof)
        assert [] == await log.check_tree(tenant)


async def test_an_open_transaction_holds_the_tree_back(pg_schema: str) -> None:
    """An event inserted in a transaction still open is not a leaf, nor is any event that
    commits after it began; once it commits, the tree takes them all, and the head taken
    before is a prefix of the new one."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await log.append("t", "a", [Noted(text="1")])
        await log.wait_readable()  # other sessions of the shared server may hold it back
        assert 1 == (await log.tree_head("t")).size
        holder = await asyncpg.connect(PG_URL)
        try:
            transaction = holder.transaction()
            await transaction.start()
            await raw_event_insert(holder, pg_schema, "t", "held", 1, "held")
            await log.append("t", "b", [Noted(text="2")])
            before = await log.tree_head("t")
            await transaction.commit()
        finally:
            await holder.close()
        await log.wait_readable()
        after = await log.tree_head("t")
        data = await tenant_leaves(log, "t")
        proof = await log.prove_consistency("t", before.size, after.size)
        assert (1, 3) == (before.size, after.size)
        assert rfc9162.consistency_ok(1, 3, before.root, after.root, proof)
        assert rfc9162.mth(data) == after.root
