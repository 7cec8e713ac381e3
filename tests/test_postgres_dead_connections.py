"""PostgreSQL: pooled connections the server ended while idle cost the caller nothing.

After `pg_terminate_backend` (what a server restart, a failover or an idle timeout does
to every connection), each dead connection in the pool used to fail one append or read
outright. Now the pool drops a connection the server closed before handing it out, a read
is tried once more on a fresh connection, and an append that hits a dead connection is a
`CommitOutcomeUnknown` the log resolves itself.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from eventlog import CheckpointRecord, EventLog, StorageError, open_log
from eventlog.storage.postgres import PostgresBackend
from tests.conftest import PG_URL
from tests.events import Noted

pytestmark = pytest.mark.postgres


@pytest.fixture
async def pg_log(pg_schema: str) -> AsyncIterator[EventLog]:
    """A log in a fresh schema."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        yield log


async def fill_pool(log: EventLog, connections: int) -> list[int]:
    """Make the log's pool hold ``connections`` idle connections; their server pids."""
    await asyncio.gather(*(log.append("t", f"warm-{n}", [Noted(text="warm")])
                           for n in range(connections)))
    storage = log.storage
    assert isinstance(storage, PostgresBackend)
    pool = storage._pool
    assert pool is not None
    return [connection.get_server_pid() for connection in pool._idle]


async def terminate(pids: list[int]) -> None:
    """End these backends from another session, as an operator or a restart would."""
    admin = await asyncpg.connect(PG_URL)
    try:
        for pid in pids:
            await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


@pytest.mark.parametrize("pause", [0.0, 0.2])
async def test_appends_and_reads_carry_on_after_idle_connections_are_terminated(
    pg_log: EventLog, pause: float,
) -> None:
    """With every idle pooled connection killed, the next appends and reads all succeed."""
    pids = await fill_pool(pg_log, 4)
    assert len(pids) >= 2
    await terminate(pids)
    await asyncio.sleep(pause)
    for number in range(len(pids) + 1):
        result = await pg_log.append("t", "after", [Noted(text=str(number))])
        assert number + 1 == result.version
    assert [str(n) for n in range(len(pids) + 1)] == [
        e.event.text async for e in pg_log.read_stream("t", "after")]  # type: ignore[attr-defined]
    assert (await pg_log.verify()).ok


async def test_reads_carry_on_after_idle_connections_are_terminated(pg_log: EventLog) -> None:
    """A view read on a connection the server ended is tried again, not failed."""
    await pg_log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"a": 1}))
    pids = await fill_pool(pg_log, 3)
    await terminate(pids)
    for _ in range(len(pids) + 1):
        latest = await pg_log.checkpoints.latest("t", "s")
        assert latest is not None


async def test_a_hold_whose_connection_the_server_ends_raises_our_error(
    pg_log: EventLog,
) -> None:
    """A hold's connection ended mid-block (a restart) raises the block's own translated
    error, not asyncpg's "cannot call Transaction.rollback()" (a writer process died of
    that after a server restart), and the log appends again afterwards."""
    await pg_log.append("t", "held", [Noted(text="before")])
    storage = pg_log.storage
    assert isinstance(storage, PostgresBackend)

    async def read_after_the_server_ended_the_hold() -> None:
        async with pg_log.hold_stream("t", "held"):
            held = storage._held.get()
            assert held is not None
            await terminate([held.get_server_pid()])
            await asyncio.sleep(0.1)
            await pg_log.stream_head("t", "held")

    with pytest.raises(StorageError) as raised:
        await read_after_the_server_ended_the_hold()
    assert "postgresql" == raised.value.backend
    assert 2 == (await pg_log.append("t", "held", [Noted(text="after")])).version
