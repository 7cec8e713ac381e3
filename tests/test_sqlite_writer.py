"""SQLite: the writer thread stores rows exactly as the SQLAlchemy path does.

A log opened from a URL appends through its own ``sqlite3`` writer thread; a log over an
application's engine appends through SQLAlchemy. Reads decode with SQLAlchemy's column
types (and an application's engine reads through SQLAlchemy), so both must store every
column in the same SQL type and text format.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import EventLog, open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.errors import InvalidInput
from eventlog.storage import sqlite as sqlite_module
from eventlog.storage.schema import build_metadata
from eventlog.storage.sqlite import SqliteBackend, encode_value, encode_values
from eventlog.storage.sqlite_writer import SqliteWriter
from tests.events import Noted

NOW = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


async def write_story(log: EventLog) -> None:
    """Checkpoints (with a blob shared twice), a plain event, and a session delete."""
    for step in range(3):
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="acme", session_id="s", run_id=RUN, step=step, checkpoint_id=f"c{step}",
            state={"same": True}))
    await log.append("acme", "notes", [Noted(text="hello")])
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="acme", session_id="gone", run_id=RUN, checkpoint_id="g", state=b"\x00"))
    assert 1 == await log.checkpoints.delete("acme", "gone")


def column_shapes(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Each table's rows as (column, SQL type, value unless it is random) tuples."""
    random_columns = {"event_id", "hash", "prev_hash", "head_hash", "data", "last_event_id"}
    connection = sqlite3.connect(path)
    try:
        tables = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
            "'sqlite_%' AND name != 'alembic_version' ORDER BY name").fetchall()
        shapes: dict[str, list[tuple[object, ...]]] = {}
        for table, created in tables:
            # In insertion order; a WITHOUT ROWID table (migration 0015) in its key's.
            order = "" if created.rstrip().endswith("WITHOUT ROWID") else " ORDER BY rowid"
            cursor = connection.execute(f'SELECT * FROM "{table}"{order}')
            names = [column[0] for column in cursor.description]
            shapes[table] = [
                tuple((name, type(value).__name__,
                       None if name in random_columns else value)
                      for name, value in zip(names, row, strict=True))
                for row in cursor
            ]
        return shapes
    finally:
        connection.close()


async def test_writer_thread_rows_match_the_sqlalchemy_path(tmp_path: Path) -> None:
    """Every table holds the same types and values whichever path appended."""
    fast, plain = tmp_path / "fast.db", tmp_path / "plain.db"
    async with open_log(f"sqlite:///{fast}", clock=lambda: NOW) as log:
        assert isinstance(getattr(log.storage, "_writer", None), SqliteWriter)
        await write_story(log)
    engine = create_async_engine(f"sqlite+aiosqlite:///{plain}")
    try:
        async with open_log(engine, clock=lambda: NOW) as log:
            assert getattr(log.storage, "_writer", None) is None
            await write_story(log)
    finally:
        await engine.dispose()
    fast_shapes, plain_shapes = column_shapes(fast), column_shapes(plain)
    assert sum(len(rows) for rows in fast_shapes.values()) > 10
    assert plain_shapes == fast_shapes


async def test_writer_recovers_after_a_refused_append(tmp_path: Path) -> None:
    """A version conflict inside the writer rolls back; the next append commits."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.append("acme", "s", [Noted(text="1")])
        async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as other:
            await other.append("acme", "s", [Noted(text="2")])
        # `log`'s cached head is stale: its first attempt conflicts inside the writer.
        result = await log.append("acme", "s", [Noted(text="3")])
        assert 3 == result.version
        assert ["1", "2", "3"] == [e.event.text async for e in log.read_stream("acme", "s")]
        assert (await log.verify()).ok


def test_values_are_bound_as_sqlalchemy_binds_each_column() -> None:
    """`encode_value` turns every value the log and views write into what SQLAlchemy's
    column type would bind on SQLite (reads decode with those types)."""
    samples = {
        sa.DateTime: NOW, sa.Uuid: RUN, sa.Boolean: True, sa.LargeBinary: b"\x00",
        sa.BigInteger: 7, sa.Integer: 7, sa.SmallInteger: 7, sa.String: "s", sa.Text: "t",
    }
    dialect = sqlite_dialect.dialect()
    checked = 0
    for table in build_metadata("sqlite", None).tables.values():
        for column in table.columns:
            value = samples[type(column.type)]
            bind = column.type.dialect_impl(dialect).bind_processor(dialect)
            assert (value if bind is None else bind(value)) == encode_value(value), column
            checked += 1
    assert checked > 50


def test_an_encoded_moment_is_reused_only_for_the_same_object() -> None:
    """An append binds one recorded time several times (its event, each view row): the
    text is made once, and a different moment, even an equal one, gets its own text."""
    calls: list[datetime] = []

    def encode(moment: datetime) -> str:
        calls.append(moment)
        return str(len(calls))

    remembering = sqlite_module._LastEncoded(encode)
    later = datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC)
    assert ["1", "1", "2", "3"] == [remembering(NOW), remembering(NOW), remembering(later),
                                    remembering(NOW.replace())]
    assert encode_value(NOW) == encode_value(NOW.replace()) == "2030-01-02 03:04:05.678901"
    assert [encode_value(NOW), "x", 1, 0.5, True, b"b", None, RUN.hex] == encode_values(
        [NOW, "x", 1, 0.5, True, b"b", None, RUN])

async def test_synchronous_is_chosen_per_log_and_checked(tmp_path: Path) -> None:
    """``open_log(url, synchronous="NORMAL")`` sets it on the writer's connection and the
    readers'; the default stays FULL; a level outside FULL, NORMAL, EXTRA is refused by
    name (OFF could corrupt the file on a power cut)."""
    async with open_log(f"sqlite:///{tmp_path / 'normal.db'}", synchronous="normal") as log:
        await log.append("t", "s", [Noted(text="a")])
        writer = log.storage._writer  # type: ignore[attr-defined]
        assert 1 == writer._connection.execute("PRAGMA synchronous").fetchone()[0]
        async with log.storage.engine.connect() as connection:  # type: ignore[attr-defined]
            assert 1 == (await connection.exec_driver_sql("PRAGMA synchronous")).scalar_one()
    async with open_log(f"sqlite:///{tmp_path / 'full.db'}") as log:
        await log.append("t", "s", [Noted(text="a")])
        writer = log.storage._writer  # type: ignore[attr-defined]
        assert 2 == writer._connection.execute("PRAGMA synchronous").fetchone()[0]
    for wrong in ("OFF", "fast", 2):
        with pytest.raises(InvalidInput, match=r"synchronous.*FULL, NORMAL, EXTRA"):
            SqliteBackend(str(tmp_path / "x.db"), synchronous=wrong)  # type: ignore[arg-type]
