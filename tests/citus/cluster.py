"""The Citus cluster the ``citus`` campaign runs on: found, or built and started, once.

The scripts (``build.sh``, ``cluster.sh``) and Citus's source live outside the repo, in
``shared/citus`` beside it or above it (``$EVENTLOG_CITUS_DIR`` names it elsewhere):
Citus is no Debian package and nothing in the project's own install needs it. Start is
idempotent: a cluster already answering on the coordinator's port is used as it is.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

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


def target() -> Iterator[BackendTarget]:
    """A `tests.conftest.BackendTarget` on the cluster: a PostgreSQL target whose URL says
    ``distributed=true`` (so child processes open it as it is), in a fresh schema."""
    from tests.conftest import BackendTarget

    ensure_cluster()
    schema = fresh_schema()
    yield BackendTarget("postgresql", f"{URL}&distributed=true", schema)
    asyncio.run(drop_schema(schema))
