"""``thread_channel_values`` is keyed by version before channel (migration 0028), so the
value rows one put stores share a leaf; an existing log is re-keyed in place, SQLite and
PostgreSQL, keeping every row and reading every checkpoint as before, and back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from benchmarks.sqlite_pages import page_owners, wal_frames
from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.storage.migrate import head_revision
from tests.conftest import PG_URL
from tests.test_holdings_folded import _pg_migrate
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

BEFORE = "0027_subgraph_index"
BY_VERSION = ["tenant_id", "thread_id", "namespace", "channel_version", "channel"]
BY_CHANNEL = ["tenant_id", "thread_id", "namespace", "channel", "channel_version"]
CHANNELS = ("messages", "step", "status")


async def _steps(url: str, **options: Any) -> None:
    """Two threads of five puts, every channel changed at every step (one version for
    all the channels a step changes, as LangGraph gives them), a write after each."""
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id="t", **options) as saver:
        for thread in ("a", "b"):
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            for step in range(1, 6):
                version = f"{step:032}.{step / 10:.16f}"
                checkpoint: Any = {
                    "v": 4, "id": f"1ef{step:05}-0000-6000-8000-{thread * 12}",
                    "ts": "2026-12-07T00:00:00+00:00",
                    "channel_values": {"messages": [f"m{n}" for n in range(step)],
                                       "step": step, "status": f"step {step}"},
                    "channel_versions": dict.fromkeys(CHANNELS, version),
                    "versions_seen": {},
                }
                config = await saver.aput(config, checkpoint, {"source": "loop", "step": step},
                                          dict.fromkeys(CHANNELS, version))
                await saver.aput_writes(config, [("messages", [f"w{step}"])], f"task-{step}")


async def _reads(url: str, **options: Any) -> list[Any]:
    """Every checkpoint of both threads as the saver reads it."""
    found = []
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id="t", **options) as saver:
        for thread in ("a", "b"):
            async for item in saver.alist({"configurable": {"thread_id": thread}}):
                found.append((item.checkpoint["id"], item.checkpoint["channel_values"],
                              item.pending_writes))
    assert len(found) == 10
    return found


def _sqlite_key(path: Path) -> tuple[list[str], list[tuple[Any, ...]]]:
    database = sqlite3.connect(path)
    try:
        columns = sorted((row[5], row[1]) for row in database.execute(
            "PRAGMA table_info(thread_channel_values)") if row[5])
        rows = sorted(database.execute("SELECT * FROM thread_channel_values").fetchall())
    finally:
        database.close()
    return [name for _, name in columns], rows


async def test_a_put_writes_its_values_side_by_side(tmp_path: Path) -> None:
    """Puts changing 12 channels of a thread that already holds 480 value rows write
    under 6 pages of the table each, on average over 10 puts (measured: 3.6; keyed by
    channel first, each row went to its own channel's leaf: 14.2)."""
    path = tmp_path / "log.db"
    channels = [f"c{n:02}" for n in range(12)]
    written = []
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{path}",
                                                   tenant_id="t") as saver:
        config: Any = {"configurable": {"thread_id": "wide", "checkpoint_ns": ""}}

        async def put(step: int) -> Any:
            version = f"{step:032}.{step / 100:.16f}"
            checkpoint: Any = {
                "v": 4, "id": f"1ef{step:05}-0000-6000-8000-000000000000",
                "ts": "2026-12-07T00:00:00+00:00",
                "channel_values": {name: f"{name} at {step}" for name in channels},
                "channel_versions": dict.fromkeys(channels, version), "versions_seen": {},
            }
            return await saver.aput(config, checkpoint, {"source": "loop", "step": step},
                                    dict.fromkeys(channels, version))

        for step in range(1, 41):
            config = await put(step)
        for step in range(41, 51):
            database = sqlite3.connect(path)
            try:
                assert not database.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                database.close()
            config = await put(step)
            owners = page_owners(path)  # read while the WAL is still there
            written.append(len({page for page, _ in wal_frames(path)
                                if owners.get(page) == "thread_channel_values"}))
    assert all(written)
    assert sum(written) / len(written) < 6, written


async def test_sqlite_rekeys_in_place_and_reads_the_same(tmp_path: Path) -> None:
    """A new file is keyed by version; taken back to 0027 it is keyed by channel with the
    same rows; opened again it is re-keyed; every checkpoint reads the same throughout."""
    path = tmp_path / "log.db"
    url = f"sqlite:///{path}"
    await _steps(url)
    key, rows = _sqlite_key(path)
    assert BY_VERSION == key
    assert len(rows) == 2 * 5 * len(CHANNELS)
    expected = await _reads(url)

    migrate_sqlite(path, BEFORE, down=True)
    assert (BY_CHANNEL, rows) == _sqlite_key(path)
    migrate_sqlite(path, head_revision(), down=False)
    assert (BY_VERSION, rows) == _sqlite_key(path)
    assert expected == await _reads(url)
    async with open_log(url) as log:
        assert (await log.verify()).ok


async def _pg_key(schema: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    connection = await asyncpg.connect(PG_URL)
    try:
        columns = await connection.fetchval(
            "SELECT array_agg(a.attname ORDER BY k.n) FROM pg_index AS i "
            "JOIN pg_class AS c ON c.oid = i.indexrelid "
            "JOIN pg_namespace AS s ON s.oid = c.relnamespace "
            "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE s.nspname = $1 AND c.relname = 'thread_channel_values_pkey'", schema)
        rows = await connection.fetch(
            f'SELECT * FROM "{schema}".thread_channel_values')
    finally:
        await connection.close()
    return list(columns), sorted(tuple(row) for row in rows)


async def test_postgres_rekeys_in_place_and_reads_the_same(pg_schema: str) -> None:
    """The same on PostgreSQL: the primary key's columns in the new order, back to the
    old one at 0027, and again at the head; the rows and the reads unchanged."""
    await _steps(PG_URL, schema=pg_schema)
    key, rows = await _pg_key(pg_schema)
    assert BY_VERSION == key
    assert len(rows) == 2 * 5 * len(CHANNELS)
    expected = await _reads(PG_URL, schema=pg_schema)

    await _pg_migrate(pg_schema, BEFORE)
    assert (BY_CHANNEL, rows) == await _pg_key(pg_schema)
    async with open_log(PG_URL, schema=pg_schema) as log:  # upgrades
        assert head_revision() == log.schema_revision
        assert (await log.verify()).ok
    assert (BY_VERSION, rows) == await _pg_key(pg_schema)
    assert expected == await _reads(PG_URL, schema=pg_schema)
