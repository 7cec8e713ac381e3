"""Wait for PostgreSQL's transaction horizon before reading the whole log.

On PostgreSQL `read_all`, `rebuild` and `compare_views` show an event only once every
transaction older than its writer has ended (the gap-safe xid8 horizon). Another session
writing to the same server (another test run, autovacuum is not one) can therefore hide
an event this test just committed for a few milliseconds. `settle` waits until every
transaction running now has ended, after which everything committed so far is visible.
"""

from __future__ import annotations

import asyncio

import asyncpg

from eventlog import EventLog
from tests.conftest import PG_URL

_TIMEOUT_S = 30.0


async def settle(log: EventLog) -> None:
    """On PostgreSQL, return once every transaction running at the call has ended."""
    if log.storage.name != "postgresql":
        return
    connection = await asyncpg.connect(PG_URL)
    try:
        horizon = await connection.fetchval("SELECT pg_snapshot_xmax(pg_current_snapshot())")
        deadline = asyncio.get_running_loop().time() + _TIMEOUT_S
        while await connection.fetchval(
            "SELECT pg_snapshot_xmin(pg_current_snapshot()) < $1::text::xid8", str(horizon)
        ):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("a PostgreSQL transaction stayed open for 30 s")
            await asyncio.sleep(0.005)
    finally:
        await connection.close()
