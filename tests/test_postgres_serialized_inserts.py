"""A thread's writes and values are inserted if absent by ``NOT EXISTS`` in PostgreSQL's
one-statement append (`eventlog.storage.sqltext.insert_if_absent_text`): a row of the same
key that another transaction holds uncommitted makes the append wait for it, and once that
transaction commits the append's insert fails on the key; the backend reads that as the
lost version race it is (`StreamVersionTaken`), and the log appends again, now seeing the
row (the first write wins). Rolled back instead, the append's own row goes in."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from eventlog import open_log
from eventlog.checkpoints import Payload
from tests.conftest import PG_URL
from tests.test_thread_read_plans import T, _fill

WRITE = (0, "messages", Payload("json", b'["mine"]'))


async def _waiting(connection: asyncpg.Connection, holder: int) -> None:
    """Until some backend waits for a lock ``holder`` holds."""
    for _ in range(500):
        if await connection.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                holder):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the append never waited for the held row")


@pytest.mark.parametrize("outcome", ["COMMIT", "ROLLBACK"])
async def test_an_append_meeting_an_uncommitted_row_of_its_key_waits_then_settles(
        pg_schema: str, outcome: str) -> None:
    """The held row committed: the put returns, the held row is the one kept, the log
    appended one event. Rolled back: the put's own row is there."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _fill(log, "x", ["0001", "0002"])
        threads = log.checkpoints.threads
        holder = await asyncpg.connect(PG_URL)
        watcher = await asyncpg.connect(PG_URL)
        try:
            existing = await holder.fetchrow(
                f'SELECT * FROM "{pg_schema}".thread_writes WHERE thread_id = $1 LIMIT 1', "x")
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute(
                f'INSERT INTO "{pg_schema}".thread_writes (tenant_id, thread_id, namespace, '
                "checkpoint_id, task_id, idx, channel, encoding, digest, task_path, version) "
                "VALUES ($1, 'x', '', '0002', 'other', 0, 'messages', $2, $3, '', 99)",
                T, existing["encoding"], existing["digest"])
            put = asyncio.create_task(threads.put_writes(T, "x", "0002", "other", [WRITE]))
            await _waiting(watcher, await holder.fetchval("SELECT pg_backend_pid()"))
            assert not put.done()
            await (transaction.commit() if outcome == "COMMIT" else transaction.rollback())
            await asyncio.wait_for(put, 30)
            rows = await watcher.fetch(
                f'SELECT version, digest FROM "{pg_schema}".thread_writes '
                "WHERE checkpoint_id = '0002' AND task_id = 'other'")
            versions = [row[0] for row in await watcher.fetch(
                f'SELECT stream_version FROM "{pg_schema}".events ORDER BY position')]
        finally:
            await holder.close()
            await watcher.close()
        found = await threads.get(T, "x", "0002")
    assert found is not None
    assert found.writes is not None
    other = [write for write in found.writes if write.task_id == "other"]
    assert 1 == len(rows) == len(other)
    if outcome == "COMMIT":  # the held row, first, is kept
        assert (99, existing["digest"]) == (rows[0][0], bytes(rows[0][1]))
    else:
        assert rows[0][0] != 99
        assert b'["mine"]' == other[0].value.data  # type: ignore[union-attr]
    assert [1, 2, 3, 4, 5] == versions  # the fill (4), the put: one event, however many tries
