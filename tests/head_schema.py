"""Write the shipped head-schema scripts (eventlog/storage/head_schema/) from what the
migrations make, and read back a schema's own account of itself for the comparison.

    python -m tests.head_schema    # after adding a migration; needs PostgreSQL, pg_dump

PostgreSQL's script is ``pg_dump``'s text of a migrated schema with its preamble, its
comments headers, the schema's own creation and its empty tables' data left out (the
stamp's one row kept); SQLite's is ``sqlite_master``'s text of a migrated file, in the
order the objects were made, and the stamp. tests/test_head_schema.py holds them to the
letter against the migrations.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import asyncpg
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from eventlog.storage import migrate
from eventlog.storage.headschema import REVISION_LINE, SCHEMA_TOKEN, SCRIPTS
from eventlog.storage.schema import build_metadata
from eventlog.storage.sqltext import quote
from tests.pg_template import drop, pg_dump_program

PG_DUMP_HEADER = re.compile(r"^--\n-- (?:Data for )?Name: .*; Type: (?P<type>[A-Z ]+); .*\n--\n",
                            re.MULTILINE)


def pg_dump(url: str, schema: str) -> str:
    """``pg_dump``'s account of ``schema`` (DDL and rows, no owner), with the name
    replaced by the placeholder so two schemas compare."""
    program = pg_dump_program()
    if program is None:
        raise RuntimeError("pg_dump is not installed")
    output = subprocess.run(
        [program, "--dbname", url, "--schema", quote(schema), "--inserts", "--no-owner"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    # psql meta-commands (\restrict with a random key, in newer pg_dump) are not SQL.
    lines = [line for line in output.splitlines() if not line.startswith("\\")]
    # Identifiers name it quoted where it must be; the dump's comments name it as it is.
    return "\n".join(lines).replace(quote(schema), SCHEMA_TOKEN).replace(schema, SCHEMA_TOKEN)


async def migrated_postgres(url: str, schema: str) -> None:
    """Create ``schema`` and run every migration on it (never the head script)."""
    engine = create_async_engine("postgresql+asyncpg://", poolclass=NullPool,
                                 async_creator=lambda: asyncpg.connect(url))
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.text(f"CREATE SCHEMA {quote(schema)}"))
            metadata = build_metadata("postgresql", schema)
            await connection.run_sync(lambda sync: migrate.replay(sync, schema, metadata))
    finally:
        await engine.dispose()


def migrated_sqlite(path: Path) -> None:
    """A new SQLite file with every migration run on it (never the head script)."""
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.begin() as connection:
            migrate.replay(connection, None, build_metadata("sqlite", None))
    finally:
        engine.dispose()


def sqlite_dump(path: Path) -> list[str]:
    """SQLite's account of the file: every object's text and every row
    (``Connection.iterdump``), but for an empty ``sqlite_sequence``: SQLite's bookkeeping
    of AUTOINCREMENT tables, left behind by the migrations' old ones (0026 made positions
    plain), which nothing reads (a row in it is kept, and differs)."""
    connection = sqlite3.connect(path)
    try:
        return [line for line in connection.iterdump()
                if line != 'DELETE FROM "sqlite_sequence";']
    finally:
        connection.close()


def postgres_script(dump: str, revision: str) -> str:
    """The head script from a migrated schema's dump: each object's statement, in the
    dump's order, but the schema's creation, the empty tables' data and the sequence's
    initial value (a new identity's own); the stamp's row kept."""
    headers = list(PG_DUMP_HEADER.finditer(dump))
    kept: list[str] = []
    for number, header in enumerate(headers):
        end = headers[number + 1].start() if number + 1 < len(headers) else len(dump)
        body = dump[header.end():end].strip()
        kind = header["type"]
        if kind in ("SCHEMA", "SEQUENCE SET"):
            continue
        if kind == "TABLE DATA":
            body = "\n".join(line for line in body.splitlines()
                             if line.startswith(f"INSERT INTO {SCHEMA_TOKEN}.alembic_version "))
            if not body:
                continue
        # Settings pg_dump places between objects (default tablespace, access method).
        body = "\n".join(line for line in body.splitlines() if not line.startswith("SET "))
        kept.append(body.strip())
    return f"{REVISION_LINE}{revision}\n" + "\n\n".join(kept) + "\n"


def sqlite_script(path: Path, revision: str) -> str:
    """The head script from a migrated file: each object's text in the order it was made
    (``sqlite_master``'s row order) and the stamp."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
            "'sqlite_%' ORDER BY rowid").fetchall()
        stamps = connection.execute(f"SELECT version_num FROM {migrate.VERSION_TABLE}"
                                    ).fetchall()
    finally:
        connection.close()
    assert [(revision,)] == stamps
    statements = [f"{row[0]};" for row in rows]
    statements.append(f"INSERT INTO {migrate.VERSION_TABLE} VALUES ('{revision}');")
    return f"{REVISION_LINE}{revision}\n" + "\n".join(statements) + "\n"


def write(url: str) -> list[Path]:
    """Write both scripts from freshly migrated databases; the files written."""
    revision = migrate.head_revision()
    schema = f"head_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(migrated_postgres(url, schema))
        postgres = postgres_script(pg_dump(url, schema), revision)
    finally:
        asyncio.run(drop(url, schema))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "log.db"
        migrated_sqlite(path)
        sqlite = sqlite_script(path, revision)
    written = [SCRIPTS / "postgresql.sql", SCRIPTS / "sqlite.sql"]
    SCRIPTS.mkdir(exist_ok=True)
    written[0].write_text(postgres, encoding="utf-8")
    written[1].write_text(sqlite, encoding="utf-8")
    return written


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/test"
    for path in write(target):
        print(f"wrote {path}")
