"""No JIT on the log's reads (docs/decisions/storage.md, "No JIT on the log's connections").

PostgreSQL compiles a statement whose estimated cost passes ``jit_above_cost`` at every
execution; a thread's checkpoints with their channel values and writes are estimated at
~850 a row, so reading a whole long thread (``alist`` without a limit) spent ~380 ms of
a ~420 ms statement compiling it. The log's own connections run ``SET jit = off`` first;
behind a transaction pooler, where a session setting would reach another client, a large
read turns it off for its own transaction. Each test EXPLAINs the very statement a
whole-thread read ran: on a plain connection it is planned with JIT (so the thread is big
enough to tell), the way the log runs it, without.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import EventLog, open_log
from eventlog.storage.postgres import session_setup
from projections.query import ViewQuery
from tests.conftest import PGBOUNCER, BackendTarget
from tests.test_thread_read_plans import THREAD_TABLES, T, _fill

STEPS = 300
"""Checkpoints of the thread: ~255,000 of estimated cost read whole, past the default
``jit_above_cost`` (100,000)."""


async def _whole_thread_read(log: EventLog) -> tuple[list[tuple[str, list[Any]]], str | None]:
    """Write a thread of `STEPS` checkpoints, analyze its tables, read it whole; the
    statements (and values) the read ran, and the ``SET LOCAL`` its read of the
    checkpoints with their related rows ran with (on Citus, which does not nest them,
    the related rows are statements of their own)."""
    await _fill(log, "long", [f"{step:05}" for step in range(STEPS)])
    storage: Any = log.storage
    async with storage.driver_connection() as driver:
        for table in THREAD_TABLES:
            await driver.execute(f"ANALYZE {storage.qualified[table]}")
    seen: list[tuple[ViewQuery, str, list[Any]]] = []
    settings: list[str | None] = []
    query_rows, fetch = storage.fetch_query_rows, storage._fetch

    async def spied_query_rows(query: ViewQuery, sql: str, values: list[Any]) -> Any:
        seen.append((query, sql, values))
        settings.clear()
        rows = await query_rows(query, sql, values)
        if query.related:
            related.append(settings[-1] if settings else None)
        return rows

    async def spied_fetch(*args: Any, **options: Any) -> Any:
        settings.append(options.get("settings"))
        return await fetch(*args, **options)

    related: list[str | None] = []
    storage.fetch_query_rows, storage._fetch = spied_query_rows, spied_fetch
    try:
        page = await log.checkpoints.threads.page(T, "long", namespace="")
    finally:
        storage.fetch_query_rows, storage._fetch = query_rows, fetch
    assert len(page) == STEPS
    assert len(related) <= 1
    return [(sql, values) for _, sql, values in seen], (related or [None])[0]


def _jit(plan: list[Any]) -> bool:
    return any(str(row[0]).lstrip().startswith("JIT:") for row in plan)


async def _plain_plan(target: BackendTarget, sql: str, values: list[Any]) -> list[Any]:
    """The statement EXPLAINed on a plain connection to the server (the control)."""
    url = target.url.split("?")[0]
    connection = await asyncpg.connect(url)
    try:
        if target.name == "postgresql":
            await connection.execute(f"SET search_path TO {target.schema}")
        return list(await connection.fetch("EXPLAIN " + sql, *values))
    finally:
        await connection.close()


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_the_logs_connections_read_a_whole_thread_without_jit(
        target: BackendTarget) -> None:
    """On its own pool's connections the log's whole-thread read is planned without JIT;
    the same statement on a plain connection is planned with it. (Citus nests no related
    rows in a statement: each of its reads is a lookup estimated far below the
    threshold, and its coordinator connections have JIT off all the same.)"""
    async with target.open() as log:
        statements, _settings = await _whole_thread_read(log)
        storage: Any = log.storage
        async with storage.driver_connection() as driver:
            assert "off" == await driver.fetchval("SHOW jit")
            ours = [await driver.fetch("EXPLAIN " + sql, *values) for sql, values in statements]
    plain = [await _plain_plan(target, sql, values) for sql, values in statements]
    assert any(map(_jit, plain)), "the thread is too small to tell"
    assert not any(map(_jit, ours))


async def _check_own_transaction(log: EventLog) -> None:
    """No session setting on the log's connections (none of ours: the pool's `setup`);
    the whole-thread read runs with ``SET LOCAL jit = off``, which is what keeps its
    statement from JIT there, and a page of 10 runs as it is.

    Behind PgBouncer the server connections are shared with every other test of the run,
    some of which open a log through it without ``pool_mode`` (whose session ``SET``
    then stays on the server connection: docs/decisions/storage.md), so the session's own
    ``jit`` is not relied on: the control sets it on for its own transaction."""
    statements, settings = await _whole_thread_read(log)
    (sql, values), = statements
    storage: Any = log.storage
    assert getattr(storage._pool, "setup", None) is None
    assert settings == "SET LOCAL jit = off"
    plain = await storage._fetch("read", "EXPLAIN " + sql, values,
                                 settings="SET LOCAL jit = on")
    without = await storage._fetch("read", "EXPLAIN " + sql, values, settings=settings)
    page = await log.checkpoints.threads.page(T, "long", namespace="", limit=10)
    assert len(page) == 10
    assert _jit(plain), "the thread is too small to tell"
    assert not _jit(without)


@pytest.mark.parametrize("target", [PGBOUNCER], indirect=True)
async def test_behind_a_transaction_pooler_a_large_read_turns_jit_off_for_itself(
        target: BackendTarget) -> None:
    """Behind PgBouncer in transaction mode the server connection is shared: a large read
    turns JIT off in its own transaction."""
    async with target.open() as log:
        await _check_own_transaction(log)


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_on_an_applications_engine_a_large_read_turns_jit_off_for_itself(
        target: BackendTarget) -> None:
    """An application's engine's connections are the application's: the same as behind a
    pooler."""
    engine = create_async_engine("postgresql+asyncpg://", pool_size=2, max_overflow=0,
                                 async_creator=lambda: asyncpg.connect(target.url))
    try:
        async with open_log(engine, schema=target.schema) as log:
            await _check_own_transaction(log)
    finally:
        await engine.dispose()


def test_a_url_that_sets_jit_keeps_its_setting() -> None:
    """The deployment's own ``jit`` (a URL parameter or ``-c jit=…`` in ``options``)
    stands, and a transaction pooler's connections get no session setting."""
    base = "postgresql://u@h/db"
    assert session_setup(base, False) == "SET jit = off"
    assert session_setup(base + "?application_name=withjit", False) == "SET jit = off"
    assert session_setup(base + "?jit=on", False) is None
    assert session_setup(base + "?options=-c%20jit%3Don", False) is None
    assert session_setup(base, True) is None


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_options_in_the_url_set_jit_for_the_logs_connections(
        target: BackendTarget) -> None:
    """A log opened with ``options=-c jit=on`` in its URL keeps JIT on its connections."""
    separator = "&" if "?" in target.url else "?"
    url = f"{target.url}{separator}options=-c%20jit%3Don"
    async with BackendTarget(target.name, url, target.schema).open() as log:
        storage: Any = log.storage
        async with storage.driver_connection() as driver:
            assert "on" == await driver.fetchval("SHOW jit")
