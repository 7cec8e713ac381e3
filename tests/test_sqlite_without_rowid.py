"""SQLite's view tables written by appends are ``WITHOUT ROWID`` (migration 0015), and the
migration converts an existing file keeping every row and index."""

from __future__ import annotations

import re
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from langgraph.checkpoint.base import empty_checkpoint

from eventlog import CheckpointRecord, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.storage.migrate import alembic_config, head_revision
from eventlog.storage.schema import SQLITE_WITHOUT_ROWID, build_metadata

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")


def _before_0015() -> str:
    """The revision 0015 follows (the migrations are chained by their down_revision)."""
    text = (Path(__file__).parent.parent / "migrations" / "versions"
            / "0015_write_pages.py").read_text()
    found = re.search(r'^down_revision = "([^"]+)"', text, re.M)
    assert found is not None
    return found.group(1)


def _tables_of_0015() -> tuple[str, ...]:
    """The tables migration 0015 stores without a rowid (its own list, as of then)."""
    namespace: dict[str, object] = {}
    text = (Path(__file__).parent.parent / "migrations" / "versions"
            / "0015_write_pages.py").read_text()
    found = re.search(r"^TABLES = \(.*?^\)", text, re.M | re.S)
    assert found is not None
    exec(found.group(0), namespace)
    tables = namespace["TABLES"]
    assert isinstance(tables, tuple)
    return tables


BEFORE = _before_0015()
"""Where the file is taken back to: only 0015 separates it from the head."""


def _layout(path: Path) -> dict[str, Any]:
    """Each table's rows (sorted) and whether it has a rowid; each index's text."""
    connection = sqlite3.connect(path)
    try:
        tables = [name for (name,) in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name != 'alembic_version' ORDER BY name")]
        created = dict(connection.execute(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'table'").fetchall())
        return {
            "rows": {name: sorted(connection.execute(f'SELECT * FROM "{name}"').fetchall(),
                                  key=repr) for name in tables},
            "without_rowid": sorted(name for name in tables
                                    if created[name].rstrip().endswith("WITHOUT ROWID")),
            "indexes": sorted(connection.execute(
                "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' "
                "AND sql IS NOT NULL").fetchall()),
        }
    finally:
        connection.close()


def _migrate(path: Path, revision: str, *, down: bool) -> None:
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            config = alembic_config(connection, None, build_metadata("sqlite", None))
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


async def _fill(path: Path) -> None:
    async with open_log(f"sqlite:///{path}") as log:
        run = uuid.uuid4()
        first = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=run, state={"n": 1}))
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=run, state={"n": 2},
            parent_id=str(first.checkpoint_id)))
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{path}",
                                                   tenant_id="t") as saver:
        config: Any = {"configurable": {"thread_id": "th", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": ["hello"]}
        checkpoint["channel_versions"] = {"messages": "1"}
        written = await saver.aput(config, checkpoint, {"source": "loop", "step": 1},
                                   {"messages": "1"})
        await saver.aput_writes(written, [("messages", ["more"])], "task")


async def test_a_new_file_stores_the_appended_views_without_rowid(tmp_path: Path) -> None:
    """A file created by open_log has exactly `SQLITE_WITHOUT_ROWID` without a rowid (the
    events table keeps its: the position is the rowid)."""
    await _fill(tmp_path / "log.db")
    assert sorted(SQLITE_WITHOUT_ROWID) == _layout(tmp_path / "log.db")["without_rowid"]


async def test_the_migration_converts_a_file_keeping_its_rows_and_indexes(
        tmp_path: Path) -> None:
    """A file just before 0015 (rowid tables, with rows) opened by open_log is upgraded: the tables
    lose their rowid, every row and every index stays; downgrading gives them back."""
    path = tmp_path / "log.db"
    await _fill(path)
    _migrate(path, BEFORE, down=True)
    old = _layout(path)
    assert [] == old["without_rowid"]
    async with open_log(f"sqlite:///{path}") as log:
        assert head_revision() == log.schema_revision
        assert (await log.verify()).ok
        latest = await log.checkpoints.latest("t", "s")
        assert latest is not None
        assert {"n": 2} == await log.checkpoints.read("t", "s", str(latest.checkpoint_id))
    # Later migrations add columns and indexes of their own: compare at 0015 itself.
    _migrate(path, "0015_write_pages", down=True)
    new = _layout(path)
    assert (old["rows"], old["indexes"]) == (new["rows"], new["indexes"])
    # At 0015 the thread record views were still there (0025 dropped them).
    assert sorted(_tables_of_0015()) == new["without_rowid"]
    _migrate(path, BEFORE, down=True)
    assert old == _layout(path)
