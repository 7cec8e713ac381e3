"""PostgreSQL behind a real PgBouncer in transaction mode (issue 21, item 6).

Under transaction pooling a server connection serves a client for one transaction, then
another client: a named prepared statement made on one is missing on the next, and a
session-level lock or setting would outlive its transaction. ``?pool_mode=transaction``
turns asyncpg's statement cache off and makes the schema check at open prepare uncached,
randomly named statements inside its one transaction; the schema lock is a transaction
lock, and every gap-safe read takes its horizon in the statement that reads. The campaign
(``pytest -m pgbouncer``) also runs the contract, crash and race tests through PgBouncer.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import uuid
from typing import Any

import pytest

from eventlog import StorageError, open_log
from eventlog.testing.contract.checkpoints import record
from tests.conftest import CAMPAIGN_COUNTS, drop_schema

pytestmark = pytest.mark.pgbouncer

CREATES = 200
OPEN_IN_A_PROCESS = """
import asyncio, sys
from eventlog import open_log

async def main() -> None:
    async with open_log(sys.argv[1], schema=sys.argv[2]) as log:
        print(log.schema_revision)

asyncio.run(main())
"""


def without_pool_mode(url: str) -> str:
    """The PgBouncer URL as a user who did not say it is a pooler would write it."""
    return url.replace("?pool_mode=transaction", "")


async def test_concurrent_creates_then_reads_through_pgbouncer(
    pgbouncer_url: str, pg_schema: str
) -> None:
    """The issue's reproduction: 200 concurrent checkpoint creates, then each read back."""
    async with open_log(pgbouncer_url, schema=pg_schema) as log:
        created = await asyncio.gather(
            *(log.checkpoints.create(record(session=f"s{n}", state={"n": n}))
              for n in range(CREATES)))
        listed = await asyncio.gather(
            *(log.checkpoints.list("t", f"s{n}") for n in range(CREATES)))
        states = await asyncio.gather(
            *(log.checkpoints.read("t", f"s{n}", str(c.checkpoint_id))
              for n, c in enumerate(created)))
        assert ([1] * CREATES, [{"n": n} for n in range(CREATES)]) == (
            [len(found) for found in listed], states)
        assert (await log.verify()).ok
    CAMPAIGN_COUNTS.append(f"pgbouncer: {CREATES} concurrent creates, then {2 * CREATES} "
                           "concurrent reads, through transaction pooling")


async def test_without_pool_mode_the_error_names_the_fix(
    pgbouncer_url: str, pg_schema: str
) -> None:
    """Without ``?pool_mode=transaction`` asyncpg's statement cache meets a server
    connection that never saw the statement; the error says what to add."""
    async def creates_then_reads() -> None:
        async with open_log(without_pool_mode(pgbouncer_url), schema=pg_schema) as log:
            await asyncio.gather(
                *(log.checkpoints.create(record(session=f"s{n}")) for n in range(CREATES)))
            await asyncio.gather(
                *(log.checkpoints.list("t", f"s{n}") for n in range(CREATES)))

    with pytest.raises(StorageError) as raised:
        await creates_then_reads()
    assert "add ?pool_mode=transaction to the URL" in str(raised.value)


async def test_closing_after_the_workload_leaves_no_unretrieved_future(
    pgbouncer_url: str, pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Closing the pool through PgBouncer reports nothing to asyncio's exception handler
    (no "Future exception was never retrieved") and logs no error."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        with caplog.at_level(logging.WARNING):
            async with open_log(pgbouncer_url, schema=pg_schema) as log:
                await asyncio.gather(
                    *(log.checkpoints.create(record(session=f"s{n}")) for n in range(CREATES)))
                await asyncio.gather(
                    *(log.checkpoints.list("t", f"s{n}") for n in range(CREATES)))
            gc.collect()  # an unretrieved future reports when it is collected
            await asyncio.sleep(0.1)
    finally:
        loop.set_exception_handler(previous)
    assert [] == [context.get("message") for context in reported]
    assert [] == [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_concurrent_opens_serialize_on_the_transaction_schema_lock(
    pgbouncer_url: str,
) -> None:
    """Eight logs opening one new schema at once through PgBouncer: the schema lock is a
    transaction lock, so each creation waits for the one before and all open at head."""
    schema = f"t_{uuid.uuid4().hex[:12]}"

    async def open_and_append(n: int) -> str | None:
        async with open_log(pgbouncer_url, schema=schema) as log:
            await log.checkpoints.create(record(session=f"s{n}"))
            return log.schema_revision

    try:
        revisions = await asyncio.gather(*(open_and_append(n) for n in range(8)))
        async with open_log(pgbouncer_url, schema=schema) as log:
            assert (await log.verify()).ok
            listed = [await log.checkpoints.list("t", f"s{n}") for n in range(8)]
            assert [1] * 8 == [len(records) for records in listed]
    finally:
        await drop_schema(schema)
    assert [revisions[0]] * 8 == revisions
    assert revisions[0] is not None


def test_processes_opening_one_after_another(pgbouncer_url: str, pg_schema: str) -> None:
    """Each process names its prepared statements from 1 again; opening names them at
    random, so none meets one an earlier process left on the server connection it gets."""
    outcomes = [
        subprocess.run([sys.executable, "-c", OPEN_IN_A_PROCESS, pgbouncer_url, pg_schema],
                       capture_output=True, text=True, timeout=120)
        for _ in range(4)
    ]
    failures = [o.stderr.strip().splitlines()[-1] for o in outcomes if o.returncode]
    assert ([], 1) == (failures, len({o.stdout for o in outcomes}))
