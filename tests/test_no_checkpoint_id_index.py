"""``thread_checkpoints_by_id`` is gone (migration 0029): a put writes one index entry
fewer, a run's checkpoints (Agent Framework's load by id) are read through the run index,
and a search by id in any thread finds what it found before, on SQLite and PostgreSQL,
before and after the upgrade, downgraded and upgraded again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from eventlog import EventLog, InvalidInput, open_log
from eventlog.storage.migrate import head_revision
from tests.conftest import PG_URL
from tests.test_holdings_folded import _pg_migrate
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite
from tests.test_thread_read_plans import T, _fill

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

BEFORE = "0028_values_by_version"
INDEX = "thread_checkpoints_by_id"

Found = tuple[list[tuple[str, str, str]], ...]


async def _filled(log: EventLog) -> None:
    """LangGraph's shape (every put of a thread under one run key, a subgraph beside it)
    and Agent Framework's (each checkpoint its own run key), an id in two threads, and
    another tenant holding the same ids and run keys (never seen from ``T``)."""
    await _fill(log, "lg", [f"1{n:03}" for n in range(30)])
    await _fill(log, "lg", [f"1{n:03}" for n in range(0, 30, 7)], namespace="child:a")
    await _fill(log, "wf", [f"2{n:03}" for n in range(20)], run_key=None)
    await _fill(log, "other", ["1007", "2003"])
    await _fill(log, "wf", ["9999"], run_key=None)
    await _fill(log, "lg", ["1007", "2003"], tenant="other-tenant")
    await _fill(log, "wf", ["2011"], run_key=None, tenant="other-tenant")


async def _reads(log: EventLog) -> Found:
    threads = log.checkpoints.threads

    def keys(found: list[object]) -> list[tuple[str, str, str]]:
        return [(item.thread_id, item.namespace, item.checkpoint_id)  # type: ignore[attr-defined]
                for item in found]

    return (
        keys(await threads.find(T, "1007")), keys(await threads.find(T, "2003")),
        keys(await threads.find(T, "nowhere")), keys(await threads.of_run(T, "2011")),
        keys(await threads.of_run(T, "run")), keys(await threads.of_run(T, "2003")),
        keys(await threads.find("third-tenant", "1007")),
        keys(await threads.of_run("third-tenant", "run")),
    )


def _check(found: Found) -> None:
    by_id_lg, by_id_wf, nowhere, one_run, lg_run, wf_and_other, walled, walled_run = found
    assert [("lg", "", "1007"), ("lg", "child:a", "1007"), ("other", "", "1007")] == by_id_lg
    assert [("other", "", "2003"), ("wf", "", "2003")] == by_id_wf
    assert [] == nowhere == walled == walled_run
    assert [("wf", "", "2011")] == one_run
    assert 30 + 5 + 2 == len(lg_run)  # "other" was filled under the same run key
    assert lg_run == sorted(lg_run)
    assert [("wf", "", "2003")] == wf_and_other


def _sqlite_index(path: Path) -> list[str]:
    database = sqlite3.connect(path)
    try:
        return [row[2] for row in database.execute(f"PRAGMA index_info({INDEX})")]
    finally:
        database.close()


async def test_sqlite_reads_the_same_without_the_index(tmp_path: Path) -> None:
    """No index by id at the head; downgraded, the index is back, (id, tenant), and the
    reads are the same; upgraded again, gone, the same."""
    path = tmp_path / "log.db"
    url = f"sqlite:///{path}"
    async with open_log(url) as log:
        await _filled(log)
        found = await _reads(log)
    _check(found)
    assert [] == _sqlite_index(path)

    migrate_sqlite(path, BEFORE, down=True)
    assert ["checkpoint_id", "tenant_id"] == _sqlite_index(path)
    async with open_log(url) as log:
        assert head_revision() == log.schema_revision
        assert found == await _reads(log)
        assert (await log.verify()).ok
    assert [] == _sqlite_index(path)


async def pg_index(schema: str, url: str = PG_URL, index: str = INDEX) -> str | None:
    """An index's definition (by default the one by id) in ``schema`` on the server at
    ``url``, or None."""
    connection = await asyncpg.connect(url)
    try:
        found = await connection.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = $2",
            schema, index)
    finally:
        await connection.close()
    return None if found is None else str(found)


async def test_postgres_reads_the_same_without_the_index(pg_schema: str) -> None:
    """The same on PostgreSQL."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _filled(log)
        found = await _reads(log)
    _check(found)
    assert await pg_index(pg_schema) is None

    await _pg_migrate(pg_schema, BEFORE)
    definition = await pg_index(pg_schema)
    assert definition is not None
    assert definition.endswith("(checkpoint_id, tenant_id)")
    async with open_log(PG_URL, schema=pg_schema) as log:
        assert head_revision() == log.schema_revision
        assert found == await _reads(log)
    assert await pg_index(pg_schema) is None


async def test_memory_reads_agree() -> None:
    """The memory backend answers the same reads the same way."""
    async with open_log("memory://") as log:
        await _filled(log)
        _check(await _reads(log))


@pytest.mark.parametrize("run_key", ["", 7, None, "x" * 5000])
async def test_a_run_key_that_could_not_be_saved_is_refused_by_name(run_key: object) -> None:
    """`of_run` validates its key as a put does, naming it."""
    async with open_log("memory://") as log:
        with pytest.raises(InvalidInput, match="run_key"):
            await log.checkpoints.threads.of_run(T, run_key)  # type: ignore[arg-type]
