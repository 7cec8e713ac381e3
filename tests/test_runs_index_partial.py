"""``thread_checkpoints_by_run`` holds only checkpoints with a run key (migration 0031):
a put without one (LangGraph invoked without a run id) writes no entry into it, a run's
checkpoints and `delete_runs` read the same, on SQLite and PostgreSQL, before and after
the upgrade, downgraded and upgraded again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from eventlog import EventLog, open_log
from eventlog.checkpoints import Payload
from eventlog.storage.migrate import head_revision
from tests.conftest import PG_URL
from tests.test_holdings_folded import _pg_migrate
from tests.test_no_checkpoint_id_index import pg_index
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite
from tests.test_thread_read_plans import T

BEFORE = "0030_values_the_digest_tells"
INDEX = "thread_checkpoints_by_run"
KEYED, UNKEYED = 6, 20
"""Checkpoints put under run keys, and without one."""


async def _put(log: EventLog, thread: str, checkpoint: str, run_key: str | None,
               tenant: str = T) -> None:
    await log.checkpoints.threads.put(tenant, thread, checkpoint, run_key=run_key,
                                      state=Payload("json", b'{"state": 1}'))


async def _filled(log: EventLog) -> None:
    for n in range(KEYED):
        await _put(log, "keyed", f"1{n:03}", "run")
    for n in range(UNKEYED):
        await _put(log, "unkeyed", f"2{n:03}", None)
    await _put(log, "keyed", "9000", "other-run")
    await _put(log, "keyed", "1001", "run", tenant="other-tenant")


async def _reads(log: EventLog) -> tuple[object, ...]:
    threads = log.checkpoints.threads
    return ([c.checkpoint_id for c in await threads.of_run(T, "run")],
            [c.checkpoint_id for c in await threads.of_run(T, "2003")],
            [c.checkpoint_id for c in await threads.of_run("third-tenant", "run")])


def _check(found: tuple[object, ...]) -> None:
    assert ([f"1{n:03}" for n in range(KEYED)], [], []) == found


async def _removes_runs(log: EventLog) -> None:
    """Both runs go (one statement a run, each through the index); nothing else."""
    threads = log.checkpoints.threads
    assert KEYED + 1 == await threads.delete_runs(T, ["run", "other-run", "no-such-run"])
    assert [] == await threads.of_run(T, "run")
    assert UNKEYED == len(await threads.page(T, "unkeyed", limit=100))
    assert 1 == len(await threads.of_run("other-tenant", "run"))
    assert (await log.verify()).ok


def _sqlite_entries(path: Path) -> tuple[int, str]:
    """(entries in the index's leaves, its definition)."""
    database = sqlite3.connect(path)
    try:
        entries = database.execute(
            "SELECT sum(ncell) FROM dbstat WHERE name = ? AND pagetype = 'leaf'",
            (INDEX,)).fetchone()[0]
        sql = database.execute("SELECT sql FROM sqlite_master WHERE name = ?",
                               (INDEX,)).fetchone()[0]
    finally:
        database.close()
    return int(entries or 0), str(sql)


async def test_sqlite_index_holds_only_keyed_checkpoints(tmp_path: Path) -> None:
    """At the head the index has an entry per keyed checkpoint only; downgraded, one per
    checkpoint; upgraded again, only the keyed; the reads and `delete_runs` the same."""
    path = tmp_path / "log.db"
    url = f"sqlite:///{path}"
    async with open_log(url) as log:
        await _filled(log)
        found = await _reads(log)
    _check(found)
    entries, sql = _sqlite_entries(path)
    assert (KEYED + 2, True) == (entries, sql.endswith("WHERE run_key IS NOT NULL"))

    migrate_sqlite(path, BEFORE, down=True)
    entries, sql = _sqlite_entries(path)
    assert (KEYED + 2 + UNKEYED, False) == (entries, "WHERE" in sql)
    async with open_log(url) as log:
        assert head_revision() == log.schema_revision
        assert found == await _reads(log)
        await _removes_runs(log)
    entries, sql = _sqlite_entries(path)
    assert (1, True) == (entries, sql.endswith("WHERE run_key IS NOT NULL"))


async def _pg_definition(schema: str) -> str:
    return str(await pg_index(schema, index=INDEX))


async def test_postgres_index_holds_only_keyed_checkpoints(pg_schema: str) -> None:
    """The same on PostgreSQL: the index partial at the head, whole when downgraded,
    partial again; the reads and `delete_runs` the same."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _filled(log)
        found = await _reads(log)
    _check(found)
    assert (await _pg_definition(pg_schema)).endswith(
        "(run_key, tenant_id) WHERE (run_key IS NOT NULL)")

    await _pg_migrate(pg_schema, BEFORE)
    assert (await _pg_definition(pg_schema)).endswith("(run_key, tenant_id)")
    async with open_log(PG_URL, schema=pg_schema) as log:
        assert head_revision() == log.schema_revision
        assert found == await _reads(log)
        await _removes_runs(log)
    assert (await _pg_definition(pg_schema)).endswith("WHERE (run_key IS NOT NULL)")


async def test_memory_agrees() -> None:
    """The memory backend answers the same."""
    async with open_log("memory://") as log:
        await _filled(log)
        _check(await _reads(log))
        await _removes_runs(log)
