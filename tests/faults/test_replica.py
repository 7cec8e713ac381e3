"""Reads from a real streaming hot standby: `open_log(url, read_url=…)` and `--read-url`.

The session fixture makes a throwaway primary and a standby of it (`pg_basebackup -R`,
streaming replication over 127.0.0.1) on free ports, because the shared server does not
allow replication connections and must not be reconfigured or restarted. Run with
``pytest -m replica`` (`.ci/run` does).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from eventlog import CheckpointRecord, EventLog, open_log
from eventlog.storage.postgres import PostgresBackend
from eventlog.testing import ReplicaStorageContract
from projections import compare_views
from tests.conftest import IN_CI
from tests.events import Noted
from tests.faults.clusters import Cluster, cluster_problem, clusters_dir
from tests.test_postgres_log_order import raw_insert, read_to_end

pytestmark = [pytest.mark.replica, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
EVENTLOG = [sys.executable, "-c", "import sys; from eventlog.cli import main; sys.exit(main())"]


@pytest.fixture(scope="session")
def replication() -> Iterator[tuple[Cluster, Cluster]]:
    """A primary on a free port and a streaming hot standby of it on another."""
    problem = cluster_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"cannot make a primary and a standby: {problem}")
        pytest.skip(f"cannot make a primary and a standby: {problem}")
    with clusters_dir() as root:
        primary, standby = Cluster(root, "primary"), Cluster(root, "standby")
        primary.initdb()
        primary.start()
        try:
            standby.base_backup_of(primary)
            standby.start()
            try:
                yield primary, standby
            finally:
                standby.stop("immediate")
        finally:
            primary.stop("immediate")


@pytest.fixture
async def replicated(replication: tuple[Cluster, Cluster]) -> AsyncIterator[EventLog]:
    """A log in a fresh schema on the primary, reading from the standby."""
    primary, standby = replication
    schema = f"r_{uuid.uuid4().hex[:12]}"
    async with open_log(primary.url(), schema=schema):
        pass
    async with open_log(primary.url(), schema=schema, read_url=standby.url()) as log:
        assert await log.wait_readable(30)  # the standby has replayed the schema
        yield log


class TestReplicaStorageContract(ReplicaStorageContract):
    """The shipped `ReplicaStorageContract` on the primary and the standby, each test in a
    fresh schema."""

    urls = ("", "")
    schema = ""

    @pytest.fixture(autouse=True)
    def _standby(self, replication: tuple[Cluster, Cluster]) -> None:
        primary, standby = replication
        self.urls = (primary.url(), standby.url())
        self.schema = f"r_{uuid.uuid4().hex[:12]}"

    def backend_url(self, tmp_path: Path) -> str:
        return self.urls[0]

    def replica_url(self, tmp_path: Path) -> str:
        return self.urls[1]

    def open_options(self) -> dict[str, str]:
        return {"schema": self.schema}


def port_of(backend: object) -> int:
    assert isinstance(backend, PostgresBackend)
    assert backend._dsn is not None
    return int(backend._dsn.rsplit(":", 1)[1].split("/")[0])


async def in_recovery(url: str) -> bool:
    connection = await asyncpg.connect(url)
    try:
        return bool(await connection.fetchval("SELECT pg_is_in_recovery()"))
    finally:
        await connection.close()


async def test_reads_go_to_the_standby_and_writes_to_the_primary(
    replicated: EventLog, replication: tuple[Cluster, Cluster]
) -> None:
    """Stores write on the primary; after wait_readable the standby serves every read."""
    primary, standby = replication
    assert (primary.port, standby.port) == (port_of(replicated.storage),
                                            port_of(replicated.reader))
    assert await in_recovery(standby.url())
    record = await replicated.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"n": 1}))
    await replicated.append("t", "notes", [Noted(text="one")])
    assert await replicated.wait_readable(30)
    events, _ = await read_to_end(replicated)
    assert ["session:s", "notes"] == [event.stream_id for event in events]
    assert ["one"] == [e.event.text async for e in replicated.read_stream("t", "notes")]  # type: ignore[attr-defined]
    assert (await replicated.verify()).ok
    assert [] == await compare_views(replicated)
    assert {"n": 1} == await replicated.checkpoints.read("t", "s", record.checkpoint_id)


async def test_standby_reads_are_gap_safe(
    replicated: EventLog, replication: tuple[Cluster, Cluster]
) -> None:
    """A transaction held open on the primary holds the standby's readers back; once it
    commits, a follower that polled meanwhile gets it, then the later one: nothing skipped.

    On a standby PostgreSQL's snapshot lists no running transactions (only its xmin says
    one is running); the horizon of the primary, read there, let "later" through and the
    cursor passed "held" for good."""
    primary, _ = replication
    schema = replicated.storage.schema  # type: ignore[attr-defined]
    held = await asyncpg.connect(primary.url())
    try:
        transaction = held.transaction()
        await transaction.start()
        await raw_insert(held, schema, "t", "held", 1, "held")
        await replicated.append("t", "later", [Noted(text="later")])
        mark = await replicated.storage.replication_mark()
        assert mark is not None
        assert await replicated.reader.wait_replayed(mark, 30)
        polled = await replicated.read_all()
        await transaction.commit()
    finally:
        await held.close()
    assert await replicated.wait_readable(30)
    shown, _ = await read_to_end(replicated, polled.cursor)
    assert ([], ["held", "later"]) == (polled.events, [event.stream_id for event in shown])


async def test_stores_decide_on_the_primary_even_when_the_standby_lags(
    replicated: EventLog,
) -> None:
    """A batch created a moment ago is claimable at once: stores never read the replica."""
    thread = "lagging"
    checkpoint = await replicated.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=thread, run_id=uuid.uuid4(), state={}))
    from eventlog import Interrupt, Resume, ResumeInput

    for _ in range(5):
        batch = await replicated.interrupts.create(
            "t", thread, [Interrupt(id="ok", reason="confirmation")],
            checkpoint.checkpoint_id, operation=("payments", "1"))
        claim = await replicated.interrupts.try_claim("t", ResumeInput(
            thread_id=thread, batch_id=batch.batch_id,
            responses=[Resume(interrupt_id="ok", status="resolved", payload={})]))
        assert claim.claim is not None


def test_the_command_reads_from_the_standby(
    replication: tuple[Cluster, Cluster], tmp_path: Path
) -> None:
    """`eventlog --read-url` verifies and exports from the standby, and tells it apart."""
    primary, standby = replication
    schema = f"r_{uuid.uuid4().hex[:12]}"

    async def write() -> None:
        async with open_log(primary.url(), schema=schema, read_url=standby.url()) as log:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="acme", session_id="s", run_id=uuid.uuid4(), state={"a": 1}))
            assert await log.wait_readable(30)

    asyncio.run(write())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    common = ["--url", primary.url(), "--read-url", standby.url(), "--schema", schema]
    verified = subprocess.run([*EVENTLOG, "verify", "--json",
                               *common], capture_output=True, text=True, env=env, check=False)
    assert 0 == verified.returncode, verified.stderr
    assert json.loads(verified.stdout)["ok"]
    exported = tmp_path / "acme.jsonl"
    done = subprocess.run([*EVENTLOG, "export", "--tenant", "acme",
                           *common, str(exported)], capture_output=True, text=True, env=env,
                          check=False)
    assert 0 == done.returncode, done.stderr
    assert '"session:s"' in exported.read_text()
    # Reading from a stopped standby fails, proving the reads went there.
    standby.stop("fast")
    try:
        refused = subprocess.run([*EVENTLOG, "verify", *common],
                                 capture_output=True, text=True, env=env, check=False)
    finally:
        standby.start()
    assert 3 == refused.returncode, refused.stdout + refused.stderr


async def test_inspect_reads_the_batch_from_the_standby(
    replication: tuple[Cluster, Cluster], replicated: EventLog
) -> None:
    """What `eventlog inspect` shows comes from the log's read side: with replay paused on
    the standby, a claim made on the primary is not in it yet, while the store (which
    decides on the primary) sees it."""
    from eventlog import Interrupt, Resume, ResumeInput
    from eventlog.interrupts.admin import inspect_batch

    _, standby = replication
    checkpoint = await replicated.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="inspected", run_id=uuid.uuid4(), state={}))
    batch = await replicated.interrupts.create(
        "t", "inspected", [Interrupt(id="ok", reason="confirmation")],
        checkpoint.checkpoint_id, operation=("payments", "1"))
    assert await replicated.wait_readable(30)
    control = await asyncpg.connect(standby.url())
    try:
        await control.execute("SELECT pg_wal_replay_pause()")
        claim = await replicated.interrupts.try_claim("t", ResumeInput(
            thread_id="inspected", batch_id=batch.batch_id,
            responses=[Resume(interrupt_id="ok", status="resolved", payload={})]))
        assert claim.claim is not None
        on_primary = await replicated.interrupts.inspect(["t"], batch.batch_id)
        on_standby = await inspect_batch(replicated, ["t"], batch.batch_id, 50, None)
        assert on_primary is not None
        assert on_standby is not None
        assert len(on_standby.audit) < len(on_primary.audit)
        assert on_standby.batch.state != on_primary.batch.state
    finally:
        await control.execute("SELECT pg_wal_replay_resume()")
        await control.close()


@asynccontextmanager
async def replay_paused(standby: Cluster) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """The standby's replay paused; yields the call that resumes it (resumed on exit)."""
    connection = await asyncpg.connect(standby.url())
    try:
        await connection.execute("SELECT pg_wal_replay_pause()")

        async def resume() -> None:
            await connection.execute("SELECT pg_wal_replay_resume()")

        try:
            yield resume
        finally:
            await resume()
    finally:
        await connection.close()


async def _resume_after(seconds: float, resume: Callable[[], Awaitable[None]]) -> None:
    await asyncio.sleep(seconds)
    await resume()


POLL = 8.0
"""A follower's poll interval here: a delivery well under it was not left to the poll."""


async def test_a_watch_on_the_standby_waits_for_the_replay_not_its_poll(
    replicated: EventLog, replication: tuple[Cluster, Cluster]
) -> None:
    """A watch reads from the standby: woken by an append its replay has not reached, it
    waits for the replay (the log's `wait_readable`), and reads the event once the replay
    resumes, rather than counting the wake-up spent and sleeping its poll interval."""
    _, standby = replication
    _, cursor = await read_to_end(replicated)
    async with replicated.watch() as watch, replay_paused(standby) as resume:
        await replicated.append("t", "watched", [Noted(text="replayed late")])
        resuming = asyncio.create_task(_resume_after(0.5, resume))
        began = time.monotonic()
        while True:
            watch.clear()
            page = await replicated.read_all(after=cursor, limit=100)
            cursor = page.cursor
            if page.events:
                break
            await watch.wait(POLL)
        waited = time.monotonic() - began
        await resuming
    assert ["watched"] == [event.stream_id for event in page.events]
    assert waited < POLL / 2


async def test_a_subscription_on_a_log_reading_the_standby_waits_for_the_primary(
    replicated: EventLog, replication: tuple[Cluster, Cluster]
) -> None:
    """A durable consumer reads the primary (where its cursor is decided): woken by an
    append an older primary transaction still hides, it delivers the event as soon as
    the older one ends, whatever the standby shows (its paused replay never saw that
    transaction). With LISTEN the listener's settling on the primary already waited for
    it; the follower's own wait for the horizon is on the primary too (`Waiter(log,
    log.storage)`), which is what a deployment without LISTEN relies on."""
    primary, standby = replication
    async with replicated.subscribe("late", poll_interval=POLL, start="end") as sub, \
            replay_paused(standby):
        held = await asyncpg.connect(primary.url())
        try:
            transaction = held.transaction()
            await transaction.start()
            await held.fetchval("SELECT pg_current_xact_id()")  # an older writer
            waiting = asyncio.create_task(sub.next_batch(1))
            await asyncio.sleep(0.05)
            await replicated.append("t", "followed", [Noted(text="hidden a while")])
            await asyncio.sleep(0.5)
            began = time.monotonic()
            await transaction.commit()
            found = await asyncio.wait_for(waiting, 3 * POLL)
            delivered = time.monotonic() - began
        finally:
            await held.close()
    assert ["followed"] == [event.stream_id for event in found]
    assert delivered < POLL / 2
