"""Issue 41: the thread record views left the write path (migration 0025). A removal folds
what the thread's checkpoints, values and writes hold from its events
(`projections.thread_holdings`); an existing log upgrades in place and removes as before.

The SQLite fixture was written by the code before 0025 (`tests/fixtures/records_before_41`):
its record tables are what that code wrote, so the fold is checked against them row for
row, and the downgrade's refill against them to the row. On PostgreSQL (plain and
encrypted) today's code writes the same history, the downgrade refills the tables from the
events, and the upgrade takes them away again.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import asyncpg
import pytest
from alembic import command
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import ForgedEvent, OpenLog, open_log
from eventlog.checkpoints.holdings import fold_thread
from eventlog.checkpoints.thread_records import Payload
from eventlog.crypto import init_keyring
from eventlog.events.threads import ThreadCheckpointPut, ThreadWritesPut, WriteRef
from eventlog.hashing import uncounted
from eventlog.storage.migrate import alembic_config, head_revision
from eventlog.storage.schema import build_metadata
from projections.thread_holdings import ThreadHoldings
from tests.conftest import PG_URL, BackendTarget
from tests.signing_outside import forge, rows
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

FIXTURE = Path(__file__).parent / "fixtures" / "records_before_41"
RECORD_TABLES = ("thread_checkpoint_records", "thread_value_records", "thread_write_records")
BEFORE = "0024_reads"


def _maker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("records_before_41", FIXTURE / "make.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _maker()


def _text(value: str) -> Payload:
    return Payload("json", json.dumps(value).encode())


def _sqlite_records(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    connection = sqlite3.connect(path)
    try:
        return {table: sorted(connection.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                for table in RECORD_TABLES}
    finally:
        connection.close()


def _sqlite_tables(path: Path) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {name for (name,) in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table'")}
    finally:
        connection.close()


def _held_by_records(records: dict[str, list[tuple[Any, ...]]]) -> dict[tuple[str, str], Any]:
    """What the record rows hold, per (tenant, thread): each checkpoint's digests and each
    value's, as `ThreadHoldings` keeps them (counted, order aside)."""
    held: dict[tuple[str, str], ThreadHoldings] = {}
    for tenant, thread, _version, namespace, checkpoint, digests in records[RECORD_TABLES[0]]:
        found = held.setdefault((tenant, thread), ThreadHoldings())
        found.checkpoints.setdefault((namespace, checkpoint), []).extend(
            bytes.fromhex(digest) for digest in digests.split())
    for tenant, thread, _version, _slot, namespace, checkpoint, digest in records[
            RECORD_TABLES[2]]:
        found = held.setdefault((tenant, thread), ThreadHoldings())
        found.checkpoints.setdefault((namespace, checkpoint), []).append(bytes(digest))
    for tenant, thread, _version, _slot, namespace, channel, version, digest in records[
            RECORD_TABLES[1]]:
        found = held.setdefault((tenant, thread), ThreadHoldings())
        found.values.setdefault((namespace, channel, version), []).append(bytes(digest))
    return {key: _counted(value) for key, value in held.items()}


def _counted(holdings: ThreadHoldings) -> dict[str, Any]:
    return {"checkpoints": {key: Counter(value) for key, value in holdings.checkpoints.items()},
            "values": {key: Counter(value) for key, value in holdings.values.items()}}


async def _folded(log: OpenLog) -> dict[tuple[str, str], Any]:
    found = {}
    for tenant, names in MAKE.THREADS.items():
        for name in names:
            holdings = await fold_thread(log, tenant, name)
            if holdings:
                found[(tenant, name)] = _counted(holdings)
    return found


async def _remove_and_check(log: OpenLog) -> None:
    """Removals after the upgrade release what they should: each thread's removed
    checkpoints' own blobs go, the kept ones read as before, and the log verifies."""
    threads = log.checkpoints.threads
    before = await MAKE.reads(log)
    counts = Counter(item.namespace for item in await threads.page("t", "chat", limit=100))
    assert await threads.prune("t", "chat", keep_latest=2) == sum(
        count - 2 for count in counts.values() if count > 2)
    assert await threads.delete_runs("t", ["r0"]) > 0
    assert await threads.delete_thread("t", "copy") > 0
    report = await log.verify()
    assert report.ok, report
    after = await MAKE.reads(log)

    def key(item: dict[str, Any]) -> tuple[str, ...]:
        return (item["tenant_id"], item["thread_id"], item["namespace"], item["checkpoint_id"])

    kept = {key(item) for item in after}
    assert len(kept) < len(before)
    assert [item for item in before if key(item) in kept] == after
    # Nothing removed is still referenced: the tenant's counts are exactly what its
    # streams' remaining events hold (what verify counts by), and a pruned checkpoint's
    # own state blob is gone.
    refs = await log.blob_refs("t")
    held: Counter[bytes] = Counter()
    for name in MAKE.THREADS["t"]:
        held.update((await fold_thread(log, "t", name)).everything())
    assert await _counted_refs(log, refs) == await _counted_refs(log, held)


async def _counted_refs(log: OpenLog, counts: Mapping[bytes, int]) -> dict[bytes, int]:
    """The non-zero counts of blobs that are counted: one the digest tells (at most
    `TOLD_BY_DIGEST` bytes) is never counted, whatever count its row holds."""
    found = {}
    for digest, count in counts.items():
        payload = await log.get_blob("t", digest)
        if count and (payload is None or not uncounted(payload)):
            found[digest] = count
    return found


async def test_a_log_written_before_0025_upgrades_and_removes_as_before(tmp_path: Path) -> None:
    """The fixture (written with the record views) opens: the tables go, the log verifies,
    every checkpoint reads as that code read it, the fold holds exactly what the record
    rows held, a downgrade refills them to the row, and removals release correctly."""
    path = tmp_path / "log.db"
    shutil.copy(FIXTURE / "log.db", path)
    written = _sqlite_records(path)
    assert all(written.values())  # the fixture holds rows in every record table
    async with open_log(f"sqlite:///{path}") as log:
        assert log.schema_revision == head_revision()
        assert (await log.verify()).ok
        read = await MAKE.reads(log)
        # ``versions`` came after the fixture (0032): each names every channel it holds.
        assert [] == [item for item in read
                      if not set(item.pop("versions")) >= set(item["channels"])]
        assert read == json.loads((FIXTURE / "reads.json").read_text())
        assert await _folded(log) == _held_by_records(written)
    assert not set(RECORD_TABLES) & _sqlite_tables(path)
    migrate_sqlite(path, BEFORE, down=True)
    assert _sqlite_records(path) == written
    async with open_log(f"sqlite:///{path}") as log:
        assert not set(RECORD_TABLES) & _sqlite_tables(path)
        await _remove_and_check(log)


async def _pg_migrate(schema: str, revision: str, url: str = PG_URL) -> None:
    """Take ``schema`` down to ``revision`` (on the server at ``url``)."""
    engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://"))
    try:
        async with engine.begin() as connection:
            await connection.run_sync(lambda sync: command.downgrade(
                alembic_config(sync, schema, build_metadata("postgresql", schema)), revision))
    finally:
        await engine.dispose()


async def _pg_records(schema: str) -> dict[str, list[tuple[Any, ...]]] | None:
    connection = await asyncpg.connect(PG_URL)
    try:
        found = {}
        for table in RECORD_TABLES:
            exists = await connection.fetchval("SELECT to_regclass($1)", f'"{schema}".{table}')
            if exists is None:
                return None
            found[table] = sorted((tuple(row) for row in await connection.fetch(
                f'SELECT * FROM "{schema}".{table}')), key=repr)
        return found
    finally:
        await connection.close()


@pytest.mark.postgres
@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_a_postgres_log_downgrades_and_upgrades_in_place(
    pg_schema: str, tmp_path: Path, encrypted: bool,
) -> None:
    """Today's code writes the fixture's history on PostgreSQL (plain, and encrypted);
    taken back to 0024 the record tables hold what the fold holds; upgraded again (by
    opening) they are gone, the log verifies, reads the same and removes correctly."""
    options: dict[str, Any] = {"schema": pg_schema}
    if encrypted:
        options["keyring"] = init_keyring(tmp_path / "kek.json")
    async with open_log(PG_URL, **options) as log:
        await MAKE.populate(log)
        read = await MAKE.reads(log)
        folded = await _folded(log)
    assert await _pg_records(pg_schema) is None
    await _pg_migrate(pg_schema, BEFORE)
    records = await _pg_records(pg_schema)
    assert records is not None
    assert all(records.values())
    assert _held_by_records(records) == folded
    async with open_log(PG_URL, **options) as log:
        assert log.schema_revision == head_revision()
        assert await _pg_records(pg_schema) is None
        assert (await log.verify()).ok
        assert await MAKE.reads(log) == read
        await _remove_and_check(log)


@pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"], indirect=True)
async def test_a_forged_write_in_a_thread_refuses_its_removal(target: BackendTarget) -> None:
    """The DBA appends a correctly chained `ThreadWritesPut` to thread ``a`` naming thread
    ``b``'s state blob (signed logs), so that pruning ``a`` would give up ``b``'s reference:
    the prune folds ``a``'s checked events, refuses with ForgedEvent naming the forged
    one, appends nothing, and ``b`` reads whole."""
    async with target.open() as log:
        threads = log.checkpoints.threads
        for name in ("a", "b"):
            for step in range(3):
                await threads.put("t", name, f"{step:04}", state=_text(f"{name} {step}"))
        victim = await threads.get("t", "b", "0000")
        assert victim is not None
        assert victim.state is not None
    async with target.open() as log:
        events = [event.event async for event in log.read_stream("t", "thread:b")]
        put = events[0]
        assert isinstance(put, ThreadCheckpointPut)
        addressed = bytes.fromhex(put.state_digest)  # keyed on an encrypted log
        assert (await log.blob_refs("t")).get(addressed) == 1
    version = await forge(target, "t", "thread:a", ThreadWritesPut(
        thread_id="a", checkpoint_id="0000", task_id="x",
        writes=[WriteRef(idx=0, channel="c", encoding="json", digest=addressed.hex())]))
    async with target.open() as log:
        with pytest.raises(ForgedEvent) as refused:
            await log.checkpoints.threads.prune("t", "a", keep_latest=1)
        stream_version = len([event async for event in log.read_stream("t", "thread:a")])
        b = await log.checkpoints.threads.get("t", "b", "0000")
    assert (refused.value.stream_id, refused.value.version) == ("thread:a", version)
    assert stream_version == version
    assert b is not None
    assert b.state == victim.state


async def _steps(log: OpenLog, thread: str, first: int, count: int) -> None:
    threads = log.checkpoints.threads
    for step in range(first, first + count):
        await threads.put("t", thread, f"{step:04}", state=_text(f"{thread} {step}"),
                          channels={"n": _text(str(step))})
        await threads.put_writes("t", thread, f"{step:04}", "task", [(0, "n", _text("w"))])


async def _consistent(log: OpenLog) -> None:
    """The log verifies and the tenant's live blob references are exactly what its
    threads' events hold (folded afresh, no cache)."""
    report = await log.verify()
    assert report.ok, report
    held: Counter[bytes] = Counter()
    for name in ("long", "other"):
        held.update((await fold_thread(log, "t", name)).everything())
    refs = await log.blob_refs("t")
    assert await _counted_refs(log, refs) == await _counted_refs(log, held)


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_removals_in_a_row_read_each_event_once(target: BackendTarget) -> None:
    """A retention pass removing a long thread batch by batch, and prunes in a row with
    puts between them, fold the thread's events once in all (the cached fold is extended
    by what came after it), and release exactly what a fold from scratch says."""
    async with target.open() as log:
        await _steps(log, "long", 0, 60)  # 120 events
        await _steps(log, "other", 0, 5)
        cache = log.checkpoints.threads._holdings
        report = await log.retention.apply("t", keep_latest=5, batch_size=10)
        assert report.checkpoints == 55
        assert report.batches >= 6
        first = cache.events_read
        tombstones = len([e async for e in log.read_stream("t", "thread:long")]) - 120
        # Each batch read the events after the previous batch's fold: the thread's 120
        # events and the tombstones, less the last (no batch after it); "other" in full
        # (it holds fewer than keep_latest + 1: nothing to remove, nothing folded).
        assert tombstones >= 6
        assert first <= 120 + tombstones
        await _consistent(log)
        for round_ in range(3):
            await _steps(log, "long", 100 + 10 * round_, 10)
            before = cache.events_read
            assert await log.checkpoints.threads.prune("t", "long", keep_latest=5) == 10
            assert cache.events_read - before <= 21  # the 20 new events and the last tombstone
            await _consistent(log)


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_cached_fold_is_not_used_once_its_last_event_is_rewritten(
    target: BackendTarget,
) -> None:
    """After a prune the cache holds the thread's fold to its tombstone; the DBA then
    rewrites that tombstone's stored hash. The next removal does not trust the cache: it
    folds from the first event, finds the broken link and refuses (ForgedEvent), and
    appends nothing."""
    async with target.open() as log:
        await _steps(log, "long", 0, 6)
        assert await log.checkpoints.threads.prune("t", "long", keep_latest=3) == 3
        tail = len([e async for e in log.read_stream("t", "thread:long")])
        await rows(target, "UPDATE events SET hash = $1 WHERE tenant_id = $2 AND stream_id = $3 "
                           "AND stream_version = $4", b"\x01" * 32, "t", "thread:long", tail)
        with pytest.raises(ForgedEvent) as refused:
            await log.checkpoints.threads.prune("t", "long", keep_latest=1)
        assert refused.value.stream_id == "thread:long"
        assert len([e async for e in log.read_stream("t", "thread:long")]) == tail
