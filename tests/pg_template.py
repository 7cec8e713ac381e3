"""Fresh PostgreSQL test schemas made from one migrated template, not migrated each time.

Opening a log on an empty schema makes its tables (the shipped head script, one round
trip of DDL: about a tenth of a second per test on this machine, over several hundred
PostgreSQL tests; it replayed every migration before). Instead, the first test of
a session opens a log on a template schema, ``pg_dump`` writes that schema's DDL (and its
``alembic_version`` row) once, the template is dropped, and each later test runs that
script with the template's name replaced by its own, in one round trip. The log then opens
a schema that is already current, as it opens any existing store.

The copy is what a first open made, to the letter (``pg_dump`` is the server's own
account of the schema), so a test cannot tell it from a new one; the tests of the
migrations themselves (tests/test_schema.py) use the empty ``pg_schema`` name instead.
Without ``pg_dump`` (or when the dump fails), or with ``EVENTLOG_TEST_MIGRATE_EACH=1``, every
schema is migrated as before, with the reason printed once at the end of the run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import asyncpg

from eventlog import open_log

_TOKEN = "tpl_schema_to_copy"
_script: str | None = None
_problem: str | None = None
_tried = False


def pg_dump_program() -> str | None:
    """The newest ``pg_dump`` of the machine's PostgreSQL (Debian keeps it out of PATH)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"),
                   key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0)
    if found:
        return str(found[-1])
    return shutil.which("pg_dump")


async def _migrated_template(url: str, schema: str) -> None:
    async with open_log(url, schema=schema):
        pass


def _dump(url: str, schema: str, program: str) -> str:
    output = subprocess.run(
        [program, "--dbname", url, "--schema", schema, "--inserts", "--no-owner",
         "--no-privileges", "--no-comments"],
        capture_output=True, text=True, check=True, timeout=120,
        env={**os.environ, "PGCONNECT_TIMEOUT": "10"}).stdout
    # psql meta-commands (\restrict, \unrestrict in newer pg_dump) are not SQL.
    lines = [line for line in output.splitlines() if not line.startswith("\\")]
    script = "\n".join(lines)
    if f"CREATE SCHEMA {schema};" not in script or "alembic_version" not in script:
        raise RuntimeError(f"pg_dump of {schema} holds no schema or no alembic_version")
    return script.replace(schema, _TOKEN)


async def drop(url: str, schema: str) -> None:
    """Drop ``schema`` and everything in it."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


def template_script(url: str) -> str | None:
    """The migrated schema's DDL with a placeholder for its name, made on first use; None
    when it cannot be made (then `problem` says why)."""
    global _script, _problem, _tried
    if _tried:
        return _script
    _tried = True
    if os.environ.get("EVENTLOG_TEST_MIGRATE_EACH") == "1":
        _problem = "EVENTLOG_TEST_MIGRATE_EACH=1"
        return None
    program = pg_dump_program()
    if program is None:
        _problem = "pg_dump is not installed"
        return None
    schema = f"tpl_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_migrated_template(url, schema))
        _script = _dump(url, schema, program)
    except (OSError, subprocess.SubprocessError, RuntimeError) as error:
        _problem = f"{type(error).__name__}: {error}"
    finally:
        asyncio.run(drop(url, schema))
    return _script


def problem() -> str | None:
    """Why schemas are migrated one by one in this run, if they are."""
    return _problem


async def _create(url: str, script: str, schema: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(script.replace(_TOKEN, schema))
    finally:
        await connection.close()


def create_migrated_schema(url: str, schema: str) -> bool:
    """Make ``schema`` a copy of the migrated template; False when there is no template
    (the log then migrates the empty schema when it opens)."""
    script = template_script(url)
    if script is None:
        return False
    asyncio.run(_create(url, script, schema))
    return True
