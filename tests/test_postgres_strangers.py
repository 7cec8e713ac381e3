"""PostgreSQL: readers wait only for transactions that can still write our events.

`read_all` is gap-safe by reading below the oldest transaction still running, but only
transactions of this database count: a session connected to another database on the same
server (another application's batch job, an idle-in-transaction console) can never write
our tables, so it must not stall followers, export or replay. One of ours still must.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from eventlog import EventLog, open_log
from tests.conftest import PG_URL
from tests.events import Noted

pytestmark = pytest.mark.postgres

STRANGER_DATABASE = "eventlog_stranger"


def url_of_database(name: str) -> str:
    """PG_URL pointing at database ``name`` instead."""
    parts = urlsplit(PG_URL)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture
async def stranger(pg_schema: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to another database of the same server, in a transaction that holds a
    transaction id (as a writer there would) for the whole test."""
    admin = await asyncpg.connect(PG_URL)
    try:
        exists = await admin.fetchval(
            "SELECT 1 FROM pg_database WHERE datname = $1", STRANGER_DATABASE)
        if not exists:
            with contextlib.suppress(asyncpg.DuplicateDatabaseError):  # made by another run
                await admin.execute(f'CREATE DATABASE "{STRANGER_DATABASE}"')
    finally:
        await admin.close()
    connection = await asyncpg.connect(url_of_database(STRANGER_DATABASE))
    transaction = connection.transaction()
    await transaction.start()
    await connection.execute("SELECT pg_current_xact_id()")
    try:
        yield connection
    finally:
        await transaction.rollback()
        await connection.close()


@pytest.fixture
async def pg_log(pg_schema: str) -> AsyncIterator[EventLog]:
    """A log in a fresh schema."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        yield log


async def test_a_strangers_open_transaction_does_not_stall_read_all(
    stranger: asyncpg.Connection, pg_log: EventLog,
) -> None:
    """An event committed while another database's transaction is open is readable now."""
    await pg_log.append("t", "s", [Noted(text="after the stranger began")])
    assert await pg_log.wait_readable(5.0)
    page = await pg_log.read_all(after=None, limit=10)
    assert ["after the stranger began"] == [e.event.text for e in page.events]  # type: ignore[attr-defined]


async def test_one_of_ours_still_holds_read_all_back_until_it_commits(
    stranger: asyncpg.Connection, pg_log: EventLog,
) -> None:
    """With a stranger open too, a transaction of our database that holds an id keeps
    later events out of read_all until it ends; then every event is delivered, in order."""
    ours = await asyncpg.connect(PG_URL)
    try:
        transaction = ours.transaction()
        await transaction.start()
        await ours.execute("SELECT pg_current_xact_id()")
        await pg_log.append("t", "s", [Noted(text="while ours is open")])
        assert not await pg_log.wait_readable(0.2)
        assert [] == (await pg_log.read_all(after=None, limit=10)).events
        await transaction.commit()
        assert await pg_log.wait_readable(5.0)
        page = await pg_log.read_all(after=None, limit=10)
        assert ["while ours is open"] == [e.event.text for e in page.events]  # type: ignore[attr-defined]
    finally:
        await ours.close()
