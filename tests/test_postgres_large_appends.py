"""Appends needing more than 32,767 statement parameters on PostgreSQL (issue 21, item 3).

asyncpg refuses such a statement on the client with `InterfaceError`, which the backend
classed as a lost connection: the same statement was retried 64 times and the caller got
`VersionConflict` for a stream at version 0. A large append now goes as column arrays,
whatever its size, in one transaction; and a client-side refusal is never a lost
connection.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from eventlog import CommitOutcomeUnknown, EventLog, StorageError, open_log
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from eventlog.storage.postgres import PostgresBackend
from tests.conftest import PG_URL
from tests.events import Noted

pytestmark = pytest.mark.postgres

SECONDS = 30.0
"""Each append takes about a second here; before the fix they ran 3 s to minutes."""


@pytest.fixture
async def pg_log(pg_schema: str) -> AsyncIterator[EventLog]:
    async with open_log(PG_URL, schema=pg_schema) as log:
        yield log


async def test_an_append_of_3700_events_is_written(pg_log: EventLog) -> None:
    """log.append of 3,700 events (33,300 event parameters) writes them all at once."""
    started = time.monotonic()
    result = await pg_log.append("t", "s", [Noted(text=f"e{n}") for n in range(3700)])
    assert (3700, True) == (result.version, time.monotonic() - started < SECONDS)


async def test_put_writes_of_2500_writes_is_written(pg_log: EventLog) -> None:
    """put_writes of 2,500 writes (one event, 2,500 view rows and blobs) writes them all."""
    threads = pg_log.checkpoints.threads
    await threads.put("t", "th", "c1", state=Payload("json", b"{}"))
    writes = [(n, "out", Payload("json", b"%d" % n)) for n in range(2500)]
    assert 2500 == await threads.put_writes("t", "th", "c1", "task", writes)


async def test_put_writes_of_2500_writes_reads_back(pg_log: EventLog) -> None:
    """Every one of the 2,500 writes is stored with its own value."""
    threads = pg_log.checkpoints.threads
    await threads.put("t", "th", "c1", state=Payload("json", b"{}"))
    await threads.put_writes("t", "th", "c1", "task",
                             [(n, "out", Payload("json", b"%d" % n)) for n in range(2500)])
    checkpoint = await threads.get("t", "th", "c1")
    assert checkpoint is not None
    assert [b"%d" % n for n in range(2500)] == [
        write.value.data for write in sorted(checkpoint.writes, key=lambda w: w.idx)]


async def test_copy_of_a_500_checkpoint_thread_is_written(pg_log: EventLog) -> None:
    """copy_thread of a thread of 500 checkpoints (each with three channels) copies them
    all."""
    threads = pg_log.checkpoints.threads
    for step in range(500):
        await threads.put(
            "t", "source", f"c{step:03}", state=Payload("json", b'{"s": %d}' % step),
            channels={name: ChannelValue(f"v{step}", Payload("json", b'["%s", %d]' % (
                name.encode(), step))) for name in ("messages", "plan", "notes")},
            parent_id=f"c{step - 1:03}" if step else None, step=step,
        )
    started = time.monotonic()
    copied = await threads.copy_thread("t", "source", "target")
    assert (500, True) == (copied, time.monotonic() - started < SECONDS)


async def test_a_client_side_refusal_is_not_a_lost_connection(pg_log: EventLog) -> None:
    """A statement asyncpg refuses before sending it (wrong argument count) is a
    StorageError at once, never CommitOutcomeUnknown (which the log would retry)."""
    storage = pg_log.storage
    assert isinstance(storage, PostgresBackend)
    with pytest.raises(StorageError) as raised:
        await storage._append_statement("SELECT $1::int", [1, 2])
    assert (False, "InterfaceError") == (isinstance(raised.value, CommitOutcomeUnknown),
                                         raised.value.detail.split(":")[0])
