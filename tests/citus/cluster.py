"""The Citus cluster the ``citus`` campaign runs on: found, or built and started, once.

The scripts (``build.sh``, ``cluster.sh``) and Citus's source live outside the repo, in
``shared/citus`` beside it or above it (``$EVENTLOG_CITUS_DIR`` names it elsewhere):
Citus is no Debian package and nothing in the project's own install needs it. Start is
idempotent: a cluster already answering on the coordinator's port is used as it is.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import pytest

if TYPE_CHECKING:
    from tests.conftest import BackendTarget

PORT = int(os.environ.get("CITUS_PORT", "5441"))
BASE_URL = f"postgresql://postgres@127.0.0.1:{PORT}/postgres"
SHARDS = 4
"""Shards per table in a test's schema: a fresh schema of 13 tables is created per test,
and Citus's default of 32 shards each (416 shards) would take seconds to create."""
URL = f"{BASE_URL}?citus.shard_count={SHARDS}"
"""What the tests open (asyncpg passes the unknown query parameter as a session setting)."""


WORKPLACE_SCRIPTS = Path("/work/shared/citus")
"""Where the scripts are on this workplace's machines, for a checkout cloned elsewhere."""


def scripts() -> Path | None:
    """The directory holding ``cluster.sh``, or None when there is none."""
    named = os.environ.get("EVENTLOG_CITUS_DIR")
    if named:
        return Path(named)
    for parent in Path(__file__).resolve().parents:
        found = parent / "shared" / "citus"
        if (found / "cluster.sh").is_file():
            return found
    workplace = WORKPLACE_SCRIPTS
    return workplace if (workplace / "cluster.sh").is_file() else None


async def _workers() -> int:
    connection = await asyncpg.connect(BASE_URL, timeout=5)
    try:
        return int(await connection.fetchval(
            "SELECT count(*) FROM citus_get_active_worker_nodes()"))
    finally:
        await connection.close()


def _answering() -> str | None:
    # In a thread of its own: the caller may be inside a running event loop (an async
    # fixture), where asyncio.run is refused.
    try:
        with ThreadPoolExecutor(1) as thread:
            workers = thread.submit(asyncio.run, _workers()).result()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None if workers >= 2 else f"{workers} active workers, not 2"


_started: list[str | None] = []


FOURTH_WORKER = Path("/tmp/citus-cluster") / f"n{PORT + 3}"
"""Where ``cluster.sh add-worker`` (the rebalance test's fourth server) keeps its data."""


def _fourth_worker_started(where: Path) -> str | None:
    """Start the fourth worker again when it was ever added (its data is there): it stays
    in the cluster's metadata, and a cluster with a registered node that is down refuses
    distributed DDL (as `.ci/run` does it); the problem, or None."""
    if not (FOURTH_WORKER / "PG_VERSION").is_file():
        return None
    problem = None
    for _ in range(3):  # another pytest worker may be starting it this very moment
        done = subprocess.run([str(where / "cluster.sh"), "add-worker"], capture_output=True,
                              text=True, check=False)
        if done.returncode == 0:
            return None
        problem = f"cluster.sh add-worker failed: {(done.stdout + done.stderr)[-600:]}"
        time.sleep(1.0)
    return problem


def ensure_cluster() -> None:
    """Build (if need be) and start the cluster once per run; skip, or under CI fail,
    when it cannot be had."""
    if not _started:
        problem = _answering()
        where = scripts()
        if problem is not None and where is not None:
            for step in (["build.sh"], ["cluster.sh", "start"]):
                done = subprocess.run([str(where / step[0]), *step[1:]], capture_output=True,
                                      text=True, check=False)
                if done.returncode != 0:
                    problem = f"{step[0]} failed: {(done.stdout + done.stderr)[-600:]}"
                    break
            else:
                problem = _answering()
        elif problem is not None:
            problem += "; no shared/citus/cluster.sh found (set EVENTLOG_CITUS_DIR)"
        if problem is None and where is not None:
            problem = _fourth_worker_started(where)
        _started.append(problem)
    problem = _started[0]
    if problem is None:
        return
    message = f"the Citus cluster at {BASE_URL} is not available ({problem})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; CI=true requires it")
    pytest.skip(message)


def fresh_schema() -> str:
    """A schema name no other test uses."""
    return f"c_{uuid.uuid4().hex[:12]}"


async def drop_schema(schema: str) -> None:
    """Drop a test's schema on the coordinator (Citus drops its shards on the workers)."""
    connection = await asyncpg.connect(BASE_URL)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


_POOL: list[str] = []
"""Distributed schemas emptied after a test, for the next test of this process."""
_SHAPE: list[tuple[Any, ...]] = []
"""What a freshly distributed schema holds (its relations, columns and revision), read
once: a used schema whose shape differs from it is dropped, not reused."""

_SHAPE_SQL = """
    SELECT (SELECT array_agg(c.relname || ':' || c.relkind::text || ':' || (
                SELECT count(*) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
                AND NOT a.attisdropped) ORDER BY c.relname)
            FROM pg_class c WHERE c.relnamespace = $1::regnamespace),
           (SELECT array_agg(logicalrelid::text ORDER BY logicalrelid::text)
            FROM pg_dist_partition WHERE logicalrelid::text LIKE $2)
"""


async def _shape(connection: asyncpg.Connection, schema: str) -> tuple[Any, ...]:
    row = await connection.fetchrow(_SHAPE_SQL, schema, f'"{schema}".%')
    version = await connection.fetchval(f'SELECT version_num FROM "{schema}".alembic_version')
    return (*tuple(row or ()), version)


async def _distribute(schema: str) -> None:
    from eventlog import open_log

    async with open_log(URL, schema=schema, distributed=True):
        pass


async def _empty(schema: str) -> bool:
    """Empty every table of a used schema in one statement (the coordinator truncates every
    shard) and restart its sequences, when it still has the shape of a fresh one; False
    when it has not (the test changed its tables), or the truncation failed."""
    connection = await asyncpg.connect(BASE_URL)
    try:
        if _SHAPE and await _shape(connection, schema) != _SHAPE[0]:
            return False
        tables = [row[0] for row in await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> $2",
            schema, "alembic_version")]
        sequences = [row[0] for row in await connection.fetch(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = $1", schema)]
        await connection.execute(
            "TRUNCATE " + ", ".join(f'"{schema}"."{table}"' for table in tables)
            + " RESTART IDENTITY CASCADE")
        for sequence in sequences:  # the coordinator draws positions (ALTER is refused)
            await connection.execute("SELECT setval($1::regclass, 1, false)",
                                     f'"{schema}"."{sequence}"')
    except asyncpg.PostgresError:
        return False
    finally:
        await connection.close()
    return True


def pooled_schema() -> Iterator[str]:
    """A distributed schema at the current revision with every table empty, for one test:
    made and distributed by a first open (seconds on the cluster), or one an earlier test of
    this process used, emptied by TRUNCATE (a fraction of that). A test that changes the
    tables' shape leaves its schema to be dropped. Tests of migrations and distribution
    themselves take `fresh_schema` (empty, never opened) instead."""
    ensure_cluster()
    if _POOL:
        schema = _POOL.pop()
    else:
        schema = fresh_schema()
        asyncio.run(_distribute(schema))
        if not _SHAPE:
            _SHAPE.append(asyncio.run(_shape_of(schema)))
    yield schema
    if asyncio.run(_empty(schema)):
        _POOL.append(schema)
    else:
        asyncio.run(drop_schema(schema))


async def _shape_of(schema: str) -> tuple[Any, ...]:
    connection = await asyncpg.connect(BASE_URL)
    try:
        return await _shape(connection, schema)
    finally:
        await connection.close()


@atexit.register
def _drop_pool() -> None:
    """Drop the pooled schemas when this process ends."""
    while _POOL:
        with contextlib.suppress(Exception):
            asyncio.run(drop_schema(_POOL.pop()))


def target() -> Iterator[BackendTarget]:
    """A `tests.conftest.BackendTarget` on the cluster: a PostgreSQL target whose URL says
    ``distributed=true`` (so child processes open it as it is), in a pooled schema
    (`pooled_schema`: distributed, current, empty)."""
    from tests.conftest import BackendTarget

    for schema in pooled_schema():
        yield BackendTarget("postgresql", f"{URL}&distributed=true", schema)
