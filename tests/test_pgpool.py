"""The small asyncpg pool behind the PostgreSQL hot paths."""

from __future__ import annotations

import asyncio

import pytest

from eventlog.storage.pgpool import ConnectionPool
from tests.conftest import PG_URL, require_postgres


@pytest.fixture
async def pool() -> ConnectionPool:
    require_postgres()
    return ConnectionPool(PG_URL, max_size=2)


async def test_connections_are_reused_last_in_first_out(pool: ConnectionPool) -> None:
    """A released connection is the next one handed out."""
    async with pool.connection() as first:
        pid = first.get_server_pid()
    async with pool.connection() as second:
        assert pid == second.get_server_pid()
    await pool.close()


async def test_borrowers_beyond_the_limit_wait_for_a_release(pool: ConnectionPool) -> None:
    """With two connections out, a third borrower waits until one comes back."""
    started = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with pool.connection() as connection:
            await connection.fetchval("SELECT 1")
            started.set()
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(2)]
    await started.wait()
    waiting = asyncio.create_task(_select_one(pool))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    release.set()
    assert 1 == await asyncio.wait_for(waiting, 5)
    await asyncio.gather(*holders)
    await pool.close()


async def test_a_connection_that_failed_is_not_reused(pool: ConnectionPool) -> None:
    """An error inside the block closes that connection instead of returning it."""
    pids: list[int] = []

    async def fail() -> None:
        async with pool.connection() as connection:
            pids.append(connection.get_server_pid())
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await fail()
    async with pool.connection() as connection:
        assert pids[0] != connection.get_server_pid()
    await pool.close()


async def _select_one(pool: ConnectionPool) -> int:
    async with pool.connection() as connection:
        value: int = await connection.fetchval("SELECT 1")
        return value
