"""`EventLog.wait_readable`: waiting out PostgreSQL's read horizon before whole-log reads."""

from __future__ import annotations

import asyncpg

from eventlog import EventLog, open_log
from tests.conftest import PG_URL
from tests.events import Noted


async def test_readable_at_once_when_no_transaction_is_open(log: EventLog) -> None:
    """With no writer open, everything committed is readable: True on every backend."""
    await log.append("t", "s", [Noted(text="a")])
    assert await log.wait_readable(5.0)
    assert ["a"] == [e.event.text for e in (await log.read_all()).events]  # type: ignore[attr-defined]


async def test_an_open_writer_holds_the_horizon_until_it_ends(pg_schema: str) -> None:
    """A transaction holding an xid makes wait_readable give up; once it ends, True."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        holder = await asyncpg.connect(PG_URL)
        try:
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute("SELECT pg_current_xact_id()")  # takes an xid, like a writer
            await log.append("t", "s", [Noted(text="after the holder began")])
            assert not await log.wait_readable(0.2)
            assert [] == (await log.read_all()).events
            await transaction.rollback()
            assert await log.wait_readable(5.0)
            assert 1 == len((await log.read_all()).events)
        finally:
            await holder.close()
