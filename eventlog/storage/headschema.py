"""A new log's schema made in one step: the tables the migrations end with, created from
a script we ship, instead of replaying every migration since the first.

Opening a log on an empty PostgreSQL schema or a new SQLite file replayed all the Alembic
revisions (27 of them, 124 statements; 0.2 to 0.5 s on PostgreSQL, plus Alembic's import),
where a store with one `setup()` makes its few tables in one go. The scripts in
``head_schema/`` are what the migrations make, to the letter: tests/head_schema.py writes
them from a migrated database (``pg_dump`` of a migrated schema; SQLite's own
``sqlite_master`` text), and tests/test_head_schema.py fails when a schema they create
differs in any way from a migrated one (PostgreSQL: the two ``pg_dump`` outputs; SQLite:
the two ``iterdump`` outputs), or when a migration was added and the scripts were not
written again.

A script is used only for a schema with no table in it, only when its revision line
names the newest shipped migration (a script left behind by a new migration is never
used), and inside a savepoint: if the server refuses it (an older PostgreSQL than the
one it was written from), nothing of it stays and the migrations run as before.
Upgrades and every stamped schema take Alembic's path unchanged; on Citus the tables made
here are distributed after, as migrated ones were (`eventlog.storage.citus`).
"""

from __future__ import annotations

import sqlite3
from functools import cache
from pathlib import Path

from sqlalchemy import Connection, inspect

from eventlog._logging import get_logger
from eventlog.storage.sqltext import quote

logger = get_logger(__name__)

SCRIPTS = Path(__file__).resolve().parent / "head_schema"
"""Where the shipped scripts are: ``postgresql.sql`` and ``sqlite.sql``."""
SCHEMA_TOKEN = "eventlog_head_schema"
"""The schema name the PostgreSQL script is written with (``eventlog_head_schema.events``),
replaced by the log's own, quoted, when it runs."""
REVISION_LINE = "-- revision: "
"""How a script's first line names the revision it creates."""


@cache
def script(dialect: str) -> tuple[str, str] | None:
    """The shipped script for ``dialect`` (``postgresql`` or ``sqlite``): its revision and
    its text; None when there is none."""
    path = SCRIPTS / f"{dialect}.sql"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if not first.startswith(REVISION_LINE):
        return None
    return first[len(REVISION_LINE):].strip(), rest


def for_schema(text: str, schema: str | None) -> str:
    """The PostgreSQL script with its placeholder schema replaced by ``schema`` (quoted;
    with no schema, names are left unqualified, as the migrations leave them)."""
    return text.replace(f"{SCHEMA_TOKEN}.", f"{quote(schema)}." if schema else "")


def statements(text: str) -> list[str]:
    """The SQLite script's statements, whole (a trigger's body keeps its semicolons)."""
    found: list[str] = []
    pending = ""
    for line in text.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    if pending.strip():
        found.append(pending.strip())
    return found


def create_at_head(connection: Connection, schema: str | None, head: str) -> bool:
    """Create the tables of revision ``head`` in the empty ``schema`` from the shipped
    script (the caller holds the migration lock, inside a transaction); False when the
    script does not apply (no script for this dialect or of this revision, tables already
    in the schema, or the server refused it: then nothing of it was kept)."""
    dialect = connection.dialect.name
    shipped = script(dialect)
    if shipped is None or shipped[0] != head:
        return False
    if inspect(connection).get_table_names(schema=schema):
        return False
    try:
        with connection.begin_nested():
            if dialect == "postgresql":
                _run_postgres(connection, for_schema(shipped[1], schema))
            else:
                for statement in statements(shipped[1]):
                    connection.exec_driver_sql(statement)
    except Exception as error:  # the migrations' path decides; it names real faults
        logger.info("schema_script_refused", schema=schema, revision=head,
                    error=f"{type(error).__name__}: {error}"[:300])
        return False
    return True


def _run_postgres(connection: Connection, text: str) -> None:
    """Run the whole script in one round trip (the simple query protocol takes several
    statements at once; a prepared statement takes one)."""
    from sqlalchemy.util import await_only
    driver = connection.connection.driver_connection
    assert driver is not None
    await_only(driver.execute(text))
