"""A new log's schema comes from the shipped head script (eventlog/storage/headschema.py)
and is what the migrations make, to the letter: on PostgreSQL ``pg_dump`` of a schema the
script made equals ``pg_dump`` of one every migration made (DDL, settings, privileges,
comments, the stamp's row); on SQLite ``iterdump`` of the two files is equal. The shipped
scripts are the ones tests/head_schema.py writes from the migrations now (a migration
added without writing them again fails here, and such a script is never used). A server
that refuses the script leaves nothing of it: the migrations run."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from structlog.testing import capture_logs

from eventlog import open_log
from eventlog.storage import headschema
from eventlog.storage.migrate import shipped_head
from tests import head_schema
from tests.conftest import PG_URL, PGBOUNCER, drop_schema, require_postgres

REWRITE = "the shipped head scripts are stale: run `python -m tests.head_schema`"


def events_of_open(entries: list[MutableMapping[str, Any]]) -> list[str]:
    """The schema events an open logged (``schema_created``, ``schema_upgraded``, …)."""
    return [entry["event"] for entry in entries if entry["event"].startswith("schema_")]


@pytest.fixture
def schemas() -> Iterator[list[str]]:
    """Names of PostgreSQL schemas to drop after the test."""
    require_postgres()
    made: list[str] = []
    yield made
    for schema in made:
        asyncio.run(drop_schema(schema))


def new_schema(schemas: list[str], prefix: str = "h") -> str:
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    schemas.append(schema)
    return schema


def migrated_dump(schemas: list[str]) -> str:
    schema = new_schema(schemas, "m")
    asyncio.run(head_schema.migrated_postgres(PG_URL, schema))
    return head_schema.pg_dump(PG_URL, schema)


def open_and_close(url: str, **options: Any) -> list[str]:
    """Open a log and close it; the schema events it logged."""
    async def run() -> None:
        async with open_log(url, **options):
            pass

    with capture_logs() as entries:
        asyncio.run(run())
    return events_of_open(entries)


@pytest.mark.postgres
def test_postgres_schema_from_the_script_is_the_migrations_to_the_letter(
        schemas: list[str]) -> None:
    """pg_dump of the two schemas is the same text, and the script made the new one."""
    expected = migrated_dump(schemas)
    schema = new_schema(schemas)
    assert ["schema_created"] == open_and_close(PG_URL, schema=schema)
    assert expected == head_schema.pg_dump(PG_URL, schema)
    assert "CREATE TABLE eventlog_head_schema.events" in expected


@pytest.mark.postgres
def test_the_shipped_scripts_are_the_ones_the_migrations_write(schemas: list[str],
                                                               tmp_path: Path) -> None:
    """Both shipped scripts equal what tests/head_schema.py writes from the migrations
    now, revision line included."""
    head = shipped_head()
    assert head is not None
    expected_postgres = head_schema.postgres_script(migrated_dump(schemas), head)
    path = tmp_path / "migrated.db"
    head_schema.migrated_sqlite(path)
    expected_sqlite = head_schema.sqlite_script(path, head)
    assert expected_postgres == (headschema.SCRIPTS / "postgresql.sql").read_text(), REWRITE
    assert expected_sqlite == (headschema.SCRIPTS / "sqlite.sql").read_text(), REWRITE


def test_sqlite_file_from_the_script_is_the_migrations_to_the_letter(tmp_path: Path) -> None:
    """iterdump of a file the script made equals that of a file every migration made."""
    migrated = tmp_path / "migrated.db"
    head_schema.migrated_sqlite(migrated)
    created = tmp_path / "created.db"
    assert ["schema_created"] == open_and_close(f"sqlite:///{created}")
    assert head_schema.sqlite_dump(migrated) == head_schema.sqlite_dump(created)
    connection = sqlite3.connect(created)
    try:
        assert [(shipped_head(),)] == connection.execute(
            "SELECT version_num FROM alembic_version").fetchall()
    finally:
        connection.close()


@pytest.mark.postgres
@pytest.mark.parametrize("name", ['Odd Schema', "héllo wörld", "select"])
def test_a_schema_name_that_needs_quoting(schemas: list[str], name: str) -> None:
    """The script's schema is the log's, quoted: a name with capitals, spaces, non-ASCII
    letters or a keyword gets the schema the migrations give it (a double quote is
    refused at open)."""
    expected = migrated_dump(schemas)
    schema = f"{name} {uuid.uuid4().hex[:6]}"
    schemas.append(schema)
    assert ["schema_created"] == open_and_close(PG_URL, schema=schema)
    assert expected == head_schema.pg_dump(PG_URL, schema)


@pytest.mark.postgres
@pytest.mark.parametrize("reach", ["postgresql", PGBOUNCER])
def test_a_log_made_by_the_script_works_and_reopens(schemas: list[str], reach: str,
                                                    request: pytest.FixtureRequest) -> None:
    """A log on a schema the script made appends, verifies and reopens without a schema
    event, directly and behind PgBouncer in transaction mode (the script goes in one
    simple-protocol round trip)."""
    from tests.events import Noted
    url = request.getfixturevalue("pgbouncer_url") if reach == "pgbouncer" else PG_URL
    schema = new_schema(schemas)

    async def use() -> bool:
        async with open_log(url, schema=schema) as log:
            await log.append("t", "s", [Noted(text="one")])
            return (await log.verify()).ok

    with capture_logs() as entries:
        assert asyncio.run(use())
    assert ["schema_created"] == events_of_open(entries)
    assert [] == open_and_close(url, schema=schema)


@pytest.mark.postgres
def test_a_refused_script_leaves_nothing_and_the_migrations_run(
        schemas: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A script the server refuses halfway (its first tables made, then an error) is
    rolled back to its savepoint; the migrations make the schema, to the letter."""
    head = shipped_head()
    assert head is not None
    _, text = headschema.script("postgresql")  # type: ignore[misc]
    broken = text + "\nSELECT no_such_function();\n"
    monkeypatch.setattr(headschema, "script", lambda dialect: (head, broken))
    expected = migrated_dump(schemas)
    schema = new_schema(schemas)
    with capture_logs() as entries:
        assert ["schema_script_refused", "schema_upgraded"] == open_and_close(
            PG_URL, schema=schema)
    assert [] == [entry for entry in entries if entry["event"] == "schema_created"]
    assert expected == head_schema.pg_dump(PG_URL, schema)


@pytest.mark.postgres
def test_a_script_of_another_revision_is_never_used(
        schemas: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A script whose revision line is not the newest migration's (written before a
    migration was added) is left alone: the migrations run."""
    _, text = headschema.script("postgresql")  # type: ignore[misc]
    monkeypatch.setattr(headschema, "script", lambda dialect: ("0030_older", text))
    expected = migrated_dump(schemas)
    schema = new_schema(schemas)
    assert ["schema_upgraded"] == open_and_close(PG_URL, schema=schema)
    assert expected == head_schema.pg_dump(PG_URL, schema)


@pytest.mark.postgres
def test_a_schema_holding_other_tables_is_migrated_as_before(schemas: list[str]) -> None:
    """A schema with an application's own table in it (never stamped) takes the
    migrations' path: the script is only for an empty schema."""
    schema = new_schema(schemas)

    async def prepare() -> None:
        connection = await asyncpg.connect(PG_URL)
        try:
            await connection.execute(f'CREATE SCHEMA "{schema}"; '
                                     f'CREATE TABLE "{schema}".app_table (id int)')
        finally:
            await connection.close()

    asyncio.run(prepare())
    assert ["schema_upgraded"] == open_and_close(PG_URL, schema=schema)


def test_sqlite_statements_keep_a_triggers_body_whole() -> None:
    """The SQLite script splits into whole statements (a trigger's inner semicolons do
    not end it)."""
    text = ("CREATE TABLE a (x INTEGER);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
            "  UPDATE a SET x = 1;\n  UPDATE a SET x = 2;\nEND;\nINSERT INTO a VALUES (1);\n")
    found = headschema.statements(text)
    assert 3 == len(found)
    assert ("CREATE TRIGGER", "END;") == (found[1][:14], found[1][-4:])
