"""An append reads no table by a sequential scan, whatever the planner's statistics say.

asyncpg prepares every statement, and PostgreSQL caches a prepared statement's generic
plan: made while a table is small and analyzed (autovacuum analyzes early; a deployment
with autovacuum off, or behind, keeps that analysis), a lookup planned as a scan of the
table stays one as the table grows, until the next ``ANALYZE``. Every lookup an append
makes must therefore be one the planner cannot turn into a scan: an ``ON CONFLICT``
arbiter (the unique index, never planned), not a ``WHERE key = …`` of its own. Measured
when it was not so: a thread's values and writes inserted by ``NOT EXISTS``, 559,000 rows
read by scans over 500 puts after an ``ANALYZE`` at 30; the stream heads and a session's
latest row updated by a plain ``UPDATE`` first, the whole head table at every append.

The test analyzes the tables when they are small, appends hundreds of puts, writes and
creates on one pool (whose statements are prepared once), and counts the rows read by
sequential scans of every table of the schema (``pg_stat_user_tables``).
"""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from eventlog import CheckpointRecord, EventLog, open_log
from eventlog.checkpoints import ChannelValue, Elements, Payload
from tests.conftest import PG_URL
from tests.test_thread_read_plans import _fill

PUTS = 300
OPENING = {"alembic_version", "keyrings"}
"""Tables a log reads once as it opens (any way: they hold a row or two)."""


async def _scanned(connection: asyncpg.Connection, schema: str) -> dict[str, int]:
    """Rows read by sequential scans of each of the schema's tables, once every backend
    that used them has reported: a backend reports as its transactions end (at most once
    a second) and as it exits, which a closed pool's do just after they are closed; so
    the counts are read until they stay the same for a second (at most 30 s)."""
    last: dict[str, int] | None = None
    for _ in range(60):
        rows = await connection.fetch(
            "SELECT relname, coalesce(seq_tup_read, 0) FROM pg_stat_user_tables "
            "WHERE schemaname = $1", schema)
        found = {str(row[0]): int(row[1]) for row in rows}
        if found == last:
            return found
        last = found
        await asyncio.sleep(1.0)
    raise AssertionError(f"the scan counts never settled: {last}")


async def _step(log: EventLog, n: int) -> None:
    """A put and its writes; a put of a list grown by one (stored as a delta on the
    thread's last version of it, which it requires); a create."""
    await _fill(log, f"thread-{n % 50}", [f"{n:05}"])
    messages = tuple(Payload("json", f'"message {k}"'.encode()) for k in range(n // 50 + 1))
    await log.checkpoints.threads.put(
        "t", f"chat-{n % 50}", f"{n:05}", state=Payload("json", b"{}"),
        channels={"messages": ChannelValue(f"{n:05}", Elements(messages))})
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=f"session-{n % 50}", step=n,
        run_id=uuid.UUID(int=n % 7 + 1), state={"n": n}))


async def test_appends_scan_no_table_after_an_early_analyze(pg_schema: str) -> None:
    """After an ``ANALYZE`` of tables holding 30 steps, 300 more (on 50 threads, 50 chat
    threads and 50 sessions) read no row by a sequential scan of any table."""
    connection = await asyncpg.connect(PG_URL)
    try:
        async with open_log(PG_URL, schema=pg_schema) as log:
            for n in range(30):
                await _step(log, n)
            await connection.execute(f'ANALYZE "{pg_schema}".events')
            for table in await connection.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = $1", pg_schema):
                await connection.execute(f'ANALYZE "{pg_schema}"."{table[0]}"')
        before = await _scanned(connection, pg_schema)
        async with open_log(PG_URL, schema=pg_schema) as log:
            for n in range(30, 30 + PUTS):
                await _step(log, n)
        after = await _scanned(connection, pg_schema)
        deltas = await connection.fetchval(  # read after the count: this one scans
            f'SELECT count(*) FROM "{pg_schema}".events WHERE type = '
            "'thread_checkpoint_put' AND position(convert_to('\"base\":\"0', 'UTF8') "
            "IN data) > 0")
    finally:
        await connection.close()
    scanned = {table: after[table] - before.get(table, 0) for table in after
               if after[table] - before.get(table, 0) and table not in OPENING}
    assert {} == scanned
    assert deltas > PUTS // 2  # most chat puts were deltas, each requiring its base
