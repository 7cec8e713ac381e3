"""The small asyncpg pool behind the PostgreSQL hot paths."""

from __future__ import annotations

import asyncio

import asyncpg
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


async def test_a_connection_the_server_answered_with_an_error_is_reused(
        pool: ConnectionPool) -> None:
    """A statement the server refused (a unique violation here: a lost version race, a
    row put again) leaves the connection idle and answered in full: it goes back to the
    pool; one left inside a failed transaction does not."""
    pids: list[int] = []

    async def violate(in_transaction: bool) -> None:
        async with pool.connection() as connection:
            pids.append(connection.get_server_pid())
            if in_transaction:
                await connection.execute("BEGIN")
            await connection.execute("CREATE TEMP TABLE IF NOT EXISTS k (x int PRIMARY KEY)")
            await connection.execute("INSERT INTO k VALUES (1) ON CONFLICT DO NOTHING")
            await connection.execute("INSERT INTO k VALUES (1)")

    with pytest.raises(asyncpg.UniqueViolationError):
        await violate(False)
    async with pool.connection() as connection:
        assert pids[0] == connection.get_server_pid()
    with pytest.raises(asyncpg.UniqueViolationError):
        await violate(True)
    async with pool.connection() as connection:
        assert pids[1] != connection.get_server_pid()
    await pool.close()


async def test_a_connection_error_from_the_server_is_not_reused(pool: ConnectionPool) -> None:
    """An error of the connection class (the server ending the session) closes it."""
    pids: list[int] = []

    async def terminated() -> None:
        async with pool.connection() as connection:
            pids.append(connection.get_server_pid())
            await connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError)):
        await terminated()
    async with pool.connection() as connection:
        assert pids[0] != connection.get_server_pid()
        assert 1 == await connection.fetchval("SELECT 1")
    await pool.close()
