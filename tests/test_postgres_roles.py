"""An application role that may use its log's schema, but not create anything in the
database, opens and writes an existing log."""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import urlsplit

import asyncpg
import pytest

from eventlog import open_log
from tests.conftest import PG_URL, drop_schema, require_postgres
from tests.events import Noted
from tests.pg_template import create_migrated_schema

pytestmark = pytest.mark.postgres


async def _as_role(statements: str) -> None:
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute(statements)
    finally:
        await connection.close()


def test_a_role_without_create_on_the_database_opens_its_existing_log() -> None:
    """Opening an existing log runs no CREATE SCHEMA (even IF NOT EXISTS, which asks for
    CREATE on the database before it looks): a least-privileged role opens, appends and
    reads back."""
    require_postgres()
    schema, role = f"t_{uuid.uuid4().hex[:12]}", f"app_{uuid.uuid4().hex[:12]}"
    create_migrated_schema(PG_URL, schema)
    database = urlsplit(PG_URL).path.lstrip("/")
    asyncio.run(_as_role(
        f'CREATE ROLE "{role}" LOGIN; REVOKE CREATE ON DATABASE "{database}" FROM "{role}";'
        f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}";'
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}";'
        f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}";'))
    url = PG_URL.replace("postgres@", f"{role}@", 1)

    async def use() -> list[str]:
        async with open_log(url, schema=schema) as log:
            await log.append("t", "s", [Noted(text="hello")])
            return [event.event.text async for event in log.read_stream("t", "s")]  # type: ignore[attr-defined]

    try:
        assert ["hello"] == asyncio.run(use())
    finally:
        asyncio.run(drop_schema(schema))
        asyncio.run(_as_role(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"'))
