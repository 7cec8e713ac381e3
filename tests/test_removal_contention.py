"""Thread deletes and prunes complete while other writers keep appending to the thread, and a
PostgreSQL deadlock is retried (issue 21, item 5).

A removal decides from the views, then appends its tombstone fenced on the version it
read. Puts from other processes moved that version before nearly every try: main gave up
with `VersionConflict` after 16 re-decisions. Now, after a lost race, it decides again
holding the thread's stream (`EventLog.hold_stream`), where no other append of the stream
commits. These tests beat every try made outside a hold with a real put from a second
log over its own connections (main: `VersionConflict`); the campaign with real LangGraph
processes is tests/test_thread_contention.py, and the deadlock tests here (a second each,
the server's deadlock_timeout) run with it (``pytest -m contention``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from eventlog import CheckpointRecord, EventLog, OpenLog, open_log
from eventlog.checkpoints.thread_records import Payload
from eventlog.storage.base import AppendRequest, StorageBackend
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import SqliteBackend
from projections import INLINE_PROJECTIONS
from tests.conftest import PG_URL
from tests.events import Noted

TENANT, THREAD, SESSION = "t", "one", "chat"
RUN = uuid.uuid4()


def outraced(base: type[Any]) -> type[Any]:
    """``base`` on which every append of the thread's stream made outside a hold is beaten
    by a rival's put to the same thread, committed just before it."""

    class Outraced(base):  # type: ignore[misc,valid-type]
        rival: EventLog | None = None
        beaten = 0

        async def append(self, request: AppendRequest) -> list[int]:
            held = getattr(self, "_held", None)  # (main has no holds: every try is beaten)
            outside_a_hold = held is None or held.get() is None
            if self.rival is not None and outside_a_hold and request.stream_id in (
                    f"thread:{THREAD}", f"session:{SESSION}"):
                self.beaten += 1
                if request.stream_id.startswith("thread:"):
                    await self.rival.checkpoints.threads.put(
                        TENANT, THREAD, f"rival-{self.beaten:04d}",
                        state=Payload("json", b'{"rival": %d}' % self.beaten))
                else:
                    await self.rival.checkpoints.create(CheckpointRecord(
                        tenant_id=TENANT, session_id=SESSION, run_id=RUN,
                        checkpoint_id=f"rival-{self.beaten:04d}",
                        state={"rival": self.beaten}))
            positions: list[int] = await super().append(request)
            return positions

    return Outraced


async def outraced_log(backend: str, tmp_path: Path, schema: str) -> tuple[OpenLog, str]:
    """A log (with its stores) over an `outraced` backend, and the URL a rival opens."""
    storage: StorageBackend
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'log.db'}"
        storage = outraced(SqliteBackend)(str(tmp_path / "log.db"))
    else:
        url = PG_URL
        storage = outraced(PostgresBackend)(PG_URL, schema=schema)
    await storage.open(upgrade=True)
    return OpenLog(EventLog(storage, projections=INLINE_PROJECTIONS)), url


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        request.getfixturevalue("pg_schema")
    return str(request.param)


@pytest.mark.parametrize("removal", ["delete_thread", "prune", "delete_runs"])
async def test_a_removal_beaten_at_every_plain_try_completes(
    backend: str, removal: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    """Every tombstone appended outside a hold loses to a put committed just before it:
    the removal still completes, and the log verifies (main: `VersionConflict` after 16
    re-decisions)."""
    schema = request.getfixturevalue("pg_schema") if backend == "postgresql" else ""
    log, url = await outraced_log(backend, tmp_path, schema)
    options = {"schema": schema} if backend == "postgresql" else {}
    try:
        threads = log.checkpoints.threads
        for number in range(3):
            await threads.put(TENANT, THREAD, f"own-{number}", run_key="run-a",
                              state=Payload("json", b'{"own": %d}' % number))
        async with open_log(url, **options) as rival:
            log.storage.rival = rival  # type: ignore[attr-defined]
            if removal == "delete_thread":
                removed = await threads.delete_thread(TENANT, THREAD)
            elif removal == "prune":
                removed = await threads.prune(TENANT, THREAD, keep_latest=1)
            else:
                removed = await threads.delete_runs(TENANT, ["run-a"])
            log.storage.rival = None  # type: ignore[attr-defined]
        assert removed >= 1
        assert log.storage.beaten >= 1  # type: ignore[attr-defined]
        assert (await log.verify()).ok
    finally:
        await log.close()


async def test_a_session_delete_beaten_at_every_plain_try_completes(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    """A session's delete whose every tombstone appended outside a hold loses to another
    log's create committed just before it still completes, counting what it removed once
    (main: `VersionConflict` after 16 tries; through PgBouncer four creating processes
    starved it in 3 of 5 runs)."""
    schema = request.getfixturevalue("pg_schema") if backend == "postgresql" else ""
    log, url = await outraced_log(backend, tmp_path, schema)
    options = {"schema": schema} if backend == "postgresql" else {}
    try:
        for number in range(3):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id=TENANT, session_id=SESSION, run_id=RUN,
                checkpoint_id=f"own-{number}", state={"own": number}))
        async with open_log(url, **options) as rival:
            log.storage.rival = rival  # type: ignore[attr-defined]
            removed = await log.checkpoints.delete(TENANT, SESSION)
            log.storage.rival = None  # type: ignore[attr-defined]
        beaten = log.storage.beaten  # type: ignore[attr-defined]
        assert beaten >= 1
        # The held try removed our three and every rival create that beat a plain try.
        assert removed == 3 + beaten
        assert await log.checkpoints.list(TENANT, SESSION) == []
        assert (await log.verify()).ok
    finally:
        await log.close()


async def test_hold_stream_keeps_other_appends_of_the_stream_out(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    """While one log holds a stream, another log's append to it (over its own
    connections) does not commit; it lands, after the holder's, once the hold ends."""
    schema = request.getfixturevalue("pg_schema") if backend == "postgresql" else ""
    url = f"sqlite:///{tmp_path / 'log.db'}" if backend == "sqlite" else PG_URL
    options = {"schema": schema} if backend == "postgresql" else {}
    async with open_log(url, **options) as holder, open_log(url, **options) as other:
        await holder.append("t", "s", [Noted(text="first")])
        async with holder.hold_stream("t", "s"):
            head = await holder.stream_head("t", "s")
            waiting = asyncio.create_task(other.append("t", "s", [Noted(text="other")]))
            await asyncio.sleep(0.3)
            assert not waiting.done()
            await holder.append("t", "s", [Noted(text="held")],
                                expected_version=0 if head is None else head[0])
        await waiting
        texts = [event.event.text async for event in holder.read_stream("t", "s")]  # type: ignore[attr-defined]
        assert ["first", "held", "other"] == texts
        assert (await holder.verify()).ok


class Retries(logging.Handler):
    """The reasons of the log's ``append_retried`` debug events."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        structured = getattr(record, "structured", {})
        if structured.get("event") == "append_retried":
            self.reasons.append(str(structured.get("reason")))


@pytest.fixture
def retries() -> Iterator[Retries]:
    handler = Retries()
    logger = logging.getLogger("eventlog")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.postgres
@pytest.mark.contention  # the server breaks a deadlock after deadlock_timeout (1 s)
@pytest.mark.parametrize("first", [0, 1], ids=["A-then-B", "B-then-A"])
async def test_an_append_deadlocked_on_blob_rows_is_retried(
    pg_schema: str, first: int, retries: Retries,
) -> None:
    """Another transaction locks one of two blob rows, our append (adding references to
    both) starts, then the other locks the second row. Our append locks blob rows in
    digest order (A, then B), like every append path: when the other took B first, the
    two wait on each other and the server rolls our append back to break the deadlock;
    the log retries it and it lands. When the other took A first, our append waits on A
    holding nothing: no deadlock. (Main: the single statement locked B before A, opposite
    to a delete's releases, and raised `StorageError(DeadlockDetectedError)`.)"""
    async with open_log(PG_URL, schema=pg_schema) as log:
        payloads = sorted([b"payload one", b"payload two"],
                          key=lambda data: hashlib.sha256(data).digest())
        await log.append("t", "s", [Noted(text="store")], attach=payloads)
        digests = [hashlib.sha256(data).digest() for data in payloads]
        other = await asyncpg.connect(PG_URL)
        try:
            transaction = other.transaction()
            await transaction.start()
            lock = (f'UPDATE "{pg_schema}".blobs SET refs = refs '
                    "WHERE tenant_id = 't' AND digest = $1")
            await other.execute(lock, digests[first])
            appending = asyncio.create_task(
                log.append("t", "s", [Noted(text="again")], attach=payloads))
            await asyncio.sleep(0.3)  # our append now waits on the row the other holds
            await other.execute(lock, digests[1 - first])
            await transaction.commit()
            result = await appending
        finally:
            await other.close()
        assert 2 == result.version
        assert (["deadlock"] if first == 1 else []) == retries.reasons
        assert (await log.verify()).ok
