"""The migrated template the PostgreSQL tests copy is the schema the migrations make."""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest

from eventlog import open_log
from tests.conftest import PG_URL, drop_schema, require_postgres
from tests.pg_template import create_migrated_schema, pg_dump_program

pytestmark = pytest.mark.postgres


def _dump(schema: str) -> str:
    program = pg_dump_program()
    assert program is not None
    output = subprocess.run(
        [program, "--dbname", PG_URL, "--schema", schema, "--inserts", "--no-owner"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    lines = [line for line in output.splitlines() if not line.startswith("\\")]
    return "\n".join(lines).replace(schema, "SCHEMA")


def test_a_copied_schema_is_the_migrated_schema_to_the_letter() -> None:
    require_postgres()
    if pg_dump_program() is None:
        pytest.skip("pg_dump is not installed: the tests migrate each schema instead")
    migrated, copied = (f"m_{uuid.uuid4().hex[:12]}", f"c_{uuid.uuid4().hex[:12]}")

    async def migrate() -> None:
        async with open_log(PG_URL, schema=migrated):
            pass

    try:
        asyncio.run(migrate())
        assert create_migrated_schema(PG_URL, copied)
        assert _dump(copied) == _dump(migrated)
        assert "alembic_version" in _dump(copied)
    finally:
        asyncio.run(drop_schema(migrated))
        asyncio.run(drop_schema(copied))
