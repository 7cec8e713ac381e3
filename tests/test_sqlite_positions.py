"""SQLite's event positions are the plain rowid, without ``AUTOINCREMENT`` (migration 0026):
no commit writes ``sqlite_sequence`` any more, and an existing file is rebuilt keeping
every event, its position and every index; the downgrade gives the counter back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventlog import Event, open_log, register_event
from eventlog.storage.migrate import head_revision
from tests.test_sqlite_without_rowid import _fill
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

BEFORE = "0025_holdings_folded"


@register_event
class Noted(Event, tag="test_sqlite_positions_noted", frozen=True):
    text: str


def _events(path: Path) -> dict[str, Any]:
    """The events table's text, rows, indexes, and its row of ``sqlite_sequence``."""
    connection = sqlite3.connect(path)
    try:
        created = connection.execute(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'events'").fetchone()
        has_sequence = connection.execute(
            "SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'").fetchone()
        sequence = connection.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchall() \
            if has_sequence else []
        return {
            "created": str(created[0]),
            "rows": connection.execute("SELECT * FROM events ORDER BY position").fetchall(),
            "indexes": sorted(connection.execute(
                "SELECT name, sql FROM sqlite_schema WHERE type = 'index' "
                "AND tbl_name = 'events'").fetchall()),
            "sequence": [seq for (seq,) in sequence],
        }
    finally:
        connection.close()


async def test_a_new_file_keeps_no_position_counter(tmp_path: Path) -> None:
    """Appends (a session's creates, an adapter's put and writes) leave ``sqlite_sequence``
    without a row: no commit writes it; positions still increase from 1."""
    path = tmp_path / "log.db"
    await _fill(path)
    events = _events(path)
    assert "AUTOINCREMENT" not in events["created"].upper()
    assert [] == events["sequence"]
    positions = [row[0] for row in events["rows"]]
    assert positions == list(range(1, len(positions) + 1))


async def test_an_existing_file_is_rebuilt_keeping_every_event(tmp_path: Path) -> None:
    """A file at 0025 (``AUTOINCREMENT``, its counter at the last position) opened by
    open_log loses the keyword and keeps every event, position and index; appends go on
    after the last position; the downgrade gives the counter back at the new last one."""
    path = tmp_path / "log.db"
    await _fill(path)
    migrate_sqlite(path, BEFORE, down=True)
    old = _events(path)
    assert "PRIMARY KEY AUTOINCREMENT" in old["created"]
    last = old["rows"][-1][0]
    assert [last] == old["sequence"]

    async with open_log(f"sqlite:///{path}") as log:
        assert head_revision() == log.schema_revision
        assert (await log.verify()).ok
        upgraded = _events(path)
        assert "AUTOINCREMENT" not in upgraded["created"].upper()
        assert (old["rows"], old["indexes"]) == (upgraded["rows"], upgraded["indexes"])
        result = await log.append("t", "after", [Noted(text="next")])
        assert [last + 1] == list(result.positions)
        assert (await log.verify()).ok

    migrate_sqlite(path, BEFORE, down=True)
    downgraded = _events(path)
    assert downgraded["created"] == old["created"]
    assert [last + 1] == downgraded["sequence"]
    assert old["indexes"] == downgraded["indexes"]
    assert len(downgraded["rows"]) == len(old["rows"]) + 1


async def test_an_empty_file_downgrades_with_its_counter_at_zero(tmp_path: Path) -> None:
    """The downgrade of a log without events leaves a counter at 0 (the next is 1)."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}"):
        pass
    migrate_sqlite(path, BEFORE, down=True)
    assert [0] == _events(path)["sequence"]
    async with open_log(f"sqlite:///{path}") as log:
        result = await log.append("t", "first", [Noted(text="one")])
        assert [1] == list(result.positions)
