"""Blobs of at most three bytes are never counted (migration 0030,
`eventlog.hashing.TOLD_BY_DIGEST`): a graph's counters and nulls cost no count
update each time a checkpoint names them again; the upgrade zeroes the counts an older
library kept, and the downgrade gives them back from the events, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import asyncpg
import pytest

from eventlog import EventLog, content_digest, open_log
from eventlog.checkpoints.holdings import fold_thread
from eventlog.checkpoints.thread_records import Payload
from eventlog.storage.migrate import head_revision
from tests.conftest import PG_URL
from tests.test_holdings_folded import _pg_migrate
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

BEFORE = "0029_no_checkpoint_id_index"
T = "t"
ONE, TWO, GONE, NULL = b"\x01", b"\x02", b"\x7f", b""
"""Tiny payloads: two counters, one only a deleted thread named, a null channel's."""
PROSE = b'"' + b"a longer value, counted and purged like any state " * 3 + b'"'


async def filled_with_tiny_values(log: EventLog) -> None:
    threads = log.checkpoints.threads
    for step, counter in enumerate((ONE, TWO, ONE)):
        await threads.put(T, "kept", f"c{step}", state=Payload("json", PROSE + bytes([step])),
                          channels={"n": Payload("msgpack", counter),
                                    "branch": Payload("null", NULL)})
        await threads.put_writes(T, "kept", f"c{step}", "task",
                                 [(0, "n", Payload("msgpack", counter))])
    await threads.put(T, "deleted", "c0", state=Payload("json", PROSE),
                      channels={"n": Payload("msgpack", GONE), "m": Payload("msgpack", ONE)})
    assert await threads.delete_thread(T, "deleted") == 1


async def held_references(log: EventLog) -> Counter[bytes]:
    """The references the remaining threads' events hold (what the older code counted)."""
    held: Counter[bytes] = Counter()
    for thread in ("kept", "deleted"):
        held.update((await fold_thread(log, T, thread)).everything())
    return held


async def reads(log: EventLog) -> list[object]:
    threads = log.checkpoints.threads
    return [await threads.get(T, "kept", f"c{step}") for step in range(3)]


TINY = {content_digest(payload): payload for payload in (ONE, TWO, GONE, NULL)}


def check_head(refs: dict[bytes, int]) -> None:
    """At the head: every tiny row at 0, the deleted thread's own tiny value kept."""
    assert {digest: refs[digest] for digest in TINY} == dict.fromkeys(TINY, 0)


def check_downgraded(refs: dict[bytes, int], held: Counter[bytes]) -> None:
    """Downgraded: each tiny row holds what the events hold; the one no event holds any
    more is gone, as the older code would have purged it."""
    assert content_digest(GONE) not in refs
    for digest in (content_digest(ONE), content_digest(TWO), content_digest(NULL)):
        assert refs[digest] == held[digest] > 0


def _sqlite_refs(path: Path) -> dict[bytes, int]:
    database = sqlite3.connect(path)
    try:
        return {bytes(digest): refs for digest, refs in
                database.execute("SELECT digest, refs FROM blobs WHERE tenant_id = ?", (T,))}
    finally:
        database.close()


async def pg_refs(schema: str, url: str = PG_URL) -> dict[bytes, int]:
    """The tenant's blob counts in ``schema`` on the server at ``url``, by digest."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            f'SELECT digest, refs FROM "{schema}".blobs WHERE tenant_id = $1', T)
    finally:
        await connection.close()
    return {bytes(row["digest"]): int(row["refs"]) for row in rows}


async def test_sqlite_upgrades_and_downgrades_the_counts(tmp_path: Path) -> None:
    """At the head the tiny rows are at 0 and stay through a delete; downgraded, they hold
    the events' references again (the deleted thread's own one purged); upgraded again,
    0, and the log verifies and reads the same throughout."""
    path = tmp_path / "log.db"
    url = f"sqlite:///{path}"
    async with open_log(url) as log:
        await filled_with_tiny_values(log)
        held, found = await held_references(log), await reads(log)
        assert (await log.verify()).ok
    check_head(_sqlite_refs(path))

    migrate_sqlite(path, BEFORE, down=True)
    check_downgraded(_sqlite_refs(path), held)
    async with open_log(url) as log:
        assert head_revision() == log.schema_revision
        assert found == await reads(log)
        assert (await log.verify()).ok
    refs = _sqlite_refs(path)
    assert content_digest(GONE) not in refs
    assert all(refs[digest] == 0 for digest in TINY if digest in refs)


async def test_postgres_upgrades_and_downgrades_the_counts(pg_schema: str) -> None:
    """The same on PostgreSQL."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await filled_with_tiny_values(log)
        held, found = await held_references(log), await reads(log)
        assert (await log.verify()).ok
    check_head(await pg_refs(pg_schema))

    await _pg_migrate(pg_schema, BEFORE)
    check_downgraded(await pg_refs(pg_schema), held)
    async with open_log(PG_URL, schema=pg_schema) as log:
        assert head_revision() == log.schema_revision
        assert found == await reads(log)
        assert (await log.verify()).ok
    refs = await pg_refs(pg_schema)
    assert content_digest(GONE) not in refs
    assert all(refs[digest] == 0 for digest in TINY if digest in refs)


async def test_a_dba_count_on_a_tiny_row_decides_nothing(pg_schema: str) -> None:
    """Whoever edits the count of a tiny row (to 1, to -5) changes nothing: a release
    never takes it below what it is, the row is never purged, and verify does not
    report a count it never checks."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await filled_with_tiny_values(log)
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute(f'UPDATE "{pg_schema}".blobs SET refs = -5 '
                                 "WHERE digest = $1", content_digest(ONE))
        await connection.execute(f'UPDATE "{pg_schema}".blobs SET refs = 1 '
                                 "WHERE digest = $1", content_digest(TWO))
    finally:
        await connection.close()
    async with open_log(PG_URL, schema=pg_schema) as log:
        assert await log.checkpoints.threads.delete_thread(T, "kept") == 3
        assert ONE == await log.get_blob(T, content_digest(ONE))
        assert TWO == await log.get_blob(T, content_digest(TWO))
        assert (await log.verify()).ok
    refs = await pg_refs(pg_schema)
    assert (refs[content_digest(ONE)], refs[content_digest(TWO)]) == (-5, 1)
    assert not [digest for digest, count in refs.items() if digest not in TINY]
