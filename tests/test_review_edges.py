"""Edges found by trying to break the library (issue 14): each a clear error or a setting
that holds, never a driver error or a silent surprise."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import InvalidInput, open_log
from eventlog.storage.sqlite import BUSY_TIMEOUT_MS
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres
from tests.events import Noted


@pytest.mark.parametrize("schema", ['bad"name', "s" * 64, "é" * 32])
async def test_schema_names_postgresql_cannot_hold_exactly_are_refused(schema: str) -> None:
    """A double quote, or more than 63 bytes (PostgreSQL would cut the name short and two
    schemas could become one), is InvalidInput naming ``schema`` before any connection."""
    with pytest.raises(InvalidInput) as raised:
        async with open_log("postgresql://nobody@127.0.0.1:1/none", schema=schema):
            pass
    assert "schema" == raised.value.field


async def test_a_63_byte_schema_name_works() -> None:
    """The longest name PostgreSQL keeps whole is accepted."""
    require_postgres()
    schema = "t_" + "x" * 61
    try:
        async with open_log(PG_URL, schema=schema) as log:
            await log.append("t", "s", [Noted(text="a")])
    finally:
        await drop_schema(schema)


@pytest.mark.parametrize("target", ["memory", "sqlite", "file"], indirect=True)
async def test_a_postgresql_cursor_is_refused_on_single_writer_backends(
    target: BackendTarget,
) -> None:
    """An x: cursor carried from PostgreSQL names ``after`` instead of being read as a
    position (which is no order here and could skip events)."""
    async with open_log(target.url) as log:
        await log.append("t", "s", [Noted(text="a")])
        with pytest.raises(InvalidInput, match="PostgreSQL cursor") as raised:
            await log.read_all(after="x:5:1")
    assert "after" == raised.value.field


async def test_an_applications_sqlite_engine_used_before_gets_our_settings(tmp_path: Path
                                                                           ) -> None:
    """Connections the application's engine pooled before open_log are set up too: WAL, a
    long busy timeout and full sync, on every connection the log uses."""
    path = tmp_path / "app.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.connect() as connection:  # pooled before the log sees the engine
            await connection.execute(text("SELECT 1"))
        async with open_log(engine) as log:
            await log.append("t", "s", [Noted(text="a")])
            async with engine.connect() as connection:
                settings = [
                    (await connection.execute(text(f"PRAGMA {name}"))).scalar_one()
                    for name in ("journal_mode", "busy_timeout", "synchronous")
                ]
        assert ["wal", BUSY_TIMEOUT_MS, 2] == settings
    finally:
        await engine.dispose()
    assert "wal" == sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
