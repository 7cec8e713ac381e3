"""Shared fixtures: every contract test runs once per backend, on real storage.

PostgreSQL tests talk to the server at ``EVENTLOG_TEST_PG`` (default
``postgresql://postgres@127.0.0.1:5432/test``), each test in a schema of its own that is
dropped afterwards. Without a server they skip with the reason printed, except under
``CI=true``, where an unreachable server fails the run instead.

The ``pgbouncer`` campaign (``pytest -m pgbouncer``) runs the PostgreSQL tests that take
the ``target`` fixture (or ``PGBOUNCER`` in their own parameter lists) once more through a
real PgBouncer in transaction mode (tests/pgbouncer.py), started once per session.

The backend-generic contract ships in `eventlog.testing` (`BackendContract`);
tests/contract/test_backend_contract.py runs it on each built-in backend. The ``target``
and ``log`` fixtures here serve the tests that need a backend's insides or its processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, settings

from eventlog import EventLog, open_log
from eventlog.testing.helpers import fresh_id as fresh_id  # the tests import it from here
from tests.pg_template import create_migrated_schema
from tests.pg_template import problem as template_problem
from tests.pg_worker_db import drop_worker_database, worker_url
from tests.pgbouncer import pgbouncer_program, start_pgbouncer
from tests.sqlite_template import fresh_sqlite_url

SHARED_PG_URL = os.environ.get("EVENTLOG_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
"""The configured test database."""
PG_URL, _WORKER_DATABASE_PROBLEM = worker_url(SHARED_PG_URL)
"""Where this process's PostgreSQL tests run: under pytest-xdist a database of the
worker's own (tests/pg_worker_db.py), else the configured one."""
IN_CI = os.environ.get("CI", "").lower() == "true"
BACKENDS = ("memory", "sqlite", "file", "postgresql")
PGBOUNCER = pytest.param("pgbouncer", marks=pytest.mark.pgbouncer, id="pgbouncer")
"""A ``target`` parameter: the test server through PgBouncer in transaction mode (selected
only by ``-m pgbouncer``; the default run deselects it)."""
CITUS = pytest.param("citus", marks=pytest.mark.citus, id="citus")
SEALED_SQLITE = pytest.param("sqlite-sealed", marks=pytest.mark.sealed, id="sqlite-sealed")
SEALED_POSTGRESQL = pytest.param("postgresql-sealed", marks=pytest.mark.sealed,
                                 id="postgresql-sealed")
"""``target`` parameters: SQLite, PostgreSQL, opened with a fresh keyring (every state and
free-text field sealed), run by the sealed campaign (``pytest -m sealed``)."""
"""A ``target`` (or ``shared``) parameter for the distributed log on the Citus cluster,
run only by the citus campaign (``pytest -m citus``)."""

# Test files (tmp_path, SQLite databases, file stores) go to a memory file system when the
# machine has one and TMPDIR does not say otherwise: each SQLite commit's fsync would
# otherwise dominate the run on a slow disk (measured: 517 s against 546-593 s for the
# whole suite), and durability under power loss is not what these tests check (the crash
# tests kill processes; the full-disk tests mount disks of their own).
# Ctrl-C stops a run and prints what ran, however pytest was started: a shell without job
# control starts a background command with SIGINT ignored, and the run then went on through
# every interrupt (tests/test_interrupt.py).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The commands size their tables by COLUMNS when it is set (a terminal's width) and write
# 120 columns to a pipe otherwise; pytest-xdist starts its workers with COLUMNS=80 and
# LINES=24, and a developer's shell may export either. Every test sees the pipe's width
# unless it sets COLUMNS itself (monkeypatch), however the run was started.
for _variable in ("COLUMNS", "LINES"):
    os.environ.pop(_variable, None)

_SHM = Path("/dev/shm")
if "TMPDIR" not in os.environ and _SHM.is_dir() and os.access(_SHM, os.W_OK):
    tempfile.tempdir = str(_SHM)

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))


def _postgres_reachable() -> str | None:
    async def probe() -> None:
        connection = await asyncpg.connect(PG_URL, timeout=5)
        await connection.close()

    try:
        asyncio.run(probe())
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


_PG_PROBLEM = _postgres_reachable()


def require_postgres() -> None:
    """Skip (or under CI fail) when the PostgreSQL server does not answer."""
    if _PG_PROBLEM is None:
        return
    message = f"PostgreSQL at {PG_URL} is not reachable ({_PG_PROBLEM})"
    if IN_CI:
        pytest.fail(message + "; CI=true requires it")
    pytest.skip(message)


ICU_DATABASE = "eventlog_test_icu"


def icu_database_url() -> str:
    """A database on the test server whose default collation is ICU's ``en-US`` (as most
    production databases sort text, unlike the test database's ``C.UTF-8``), created on
    first use."""
    require_postgres()

    async def create() -> None:
        connection = await asyncpg.connect(PG_URL)
        try:
            if not await connection.fetchval(
                    "SELECT 1 FROM pg_database WHERE datname = $1", ICU_DATABASE):
                with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                    await connection.execute(
                        f"CREATE DATABASE {ICU_DATABASE} TEMPLATE template0 "
                        "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
        finally:
            await connection.close()

    asyncio.run(create())
    return PG_URL.rsplit("/", 1)[0] + "/" + ICU_DATABASE


async def drop_schema(schema: str, url: str = PG_URL) -> None:
    """Drop a test schema and everything in it."""
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema name, dropped after the test."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    asyncio.run(drop_schema(schema))


@pytest.fixture
def migrated_pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema already at the current revision (a copy of the migrated
    template: tests/pg_template.py), dropped after the test."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    create_migrated_schema(PG_URL, schema)
    yield schema
    asyncio.run(drop_schema(schema))


class BackendTarget:
    """How to open one backend's store, again and again (e.g. from another process)."""

    def __init__(self, name: str, url: str, schema: str = "eventlog",
                 keyring: str | None = None) -> None:
        self.name = name
        self.url = url
        self.schema = schema
        self.keyring = keyring
        """A keyring file the store is opened with (an encrypted log), or None."""

    def options(self) -> dict[str, str]:
        options = {"schema": self.schema} if self.name == "postgresql" else {}
        return options if self.keyring is None else {**options, "keyring": self.keyring}

    def open(self, **extra: Any) -> AbstractAsyncContextManager[EventLog]:
        """`open_log` on this store with ``extra`` options added (as the contract suite's
        `ContractBackend.open`; `eventlog.testing.interrupts.open_interrupt_log` takes either)."""
        return open_log(self.url, **self.options(), **extra)


@pytest.fixture(autouse=True)
def _structlog_left_as_found() -> Iterator[None]:
    """A test leaves structlog unconfigured when it found it so.

    structlog's ``capture_logs`` *configures* structlog on its way out (its processors put
    back), and from then on the library routes its events through structlog, whose
    defaults print every debug line on standard output: a later test in the same worker
    that parses a command's ``--json`` output read a log line first (which tests ran
    before it decided, so it failed only in some orders)."""
    loaded = sys.modules.get("structlog")
    was = loaded is not None and loaded.is_configured()
    yield
    loaded = sys.modules.get("structlog")
    if loaded is not None and not was and loaded.is_configured():
        loaded.reset_defaults()


CAMPAIGN_COUNTS: list[str] = []
"""Lines a campaign's tests add (what they did, counted), printed after the run's summary
without ``-s``."""
if _WORKER_DATABASE_PROBLEM is not None:
    CAMPAIGN_COUNTS.append("PostgreSQL tests shared one database (no worker database: "
                           f"{_WORKER_DATABASE_PROBLEM})")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker: hand the counts its tests noted to the controller, and
    drop the worker's own database (a worker ends without running atexit handlers)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["campaign_counts"] = list(CAMPAIGN_COUNTS)
        drop_worker_database()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """In the pytest-xdist controller: gather a finished worker's counts."""
    CAMPAIGN_COUNTS.extend(getattr(node, "workeroutput", {}).get("campaign_counts", ()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core, at most four (each opens PostgreSQL pools of its
    own, and the test server allows 100 connections)."""
    return max(1, min(4, os.cpu_count() or 1))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Give pytest's ``tmp_path`` the result record it reads at teardown before any phase
    can be interrupted: pytest 9 fills it only when a phase ends, so a Ctrl-C inside a test
    made the session's teardown raise ``KeyError`` over the interrupted run's summary."""
    from _pytest.tmpdir import tmppath_result_key

    item.stash.setdefault(tmppath_result_key, {})


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the campaign counts the tests noted (in every worker, under pytest-xdist)."""
    for line in CAMPAIGN_COUNTS:
        terminalreporter.write_line(line)
    if template_problem() is not None:
        terminalreporter.write_line(
            f"PostgreSQL test schemas were migrated one by one: {template_problem()}")


@pytest.fixture(scope="session")
def pgbouncer_url() -> Iterator[str]:
    """The test database through a PgBouncer in transaction mode, with the log's
    ``?pool_mode=transaction``; PgBouncer runs for the rest of the session. Skips without
    the program (fails under ``CI=true``)."""
    require_postgres()
    if pgbouncer_program() is None:
        message = "pgbouncer is not installed (Debian: apt-get install pgbouncer)"
        if IN_CI:
            pytest.fail(message + "; CI=true requires it")
        pytest.skip(message)
    with start_pgbouncer(PG_URL) as url:
        yield f"{url}?pool_mode=transaction"


def postgres_target(request: pytest.FixtureRequest, prefix: str = "t") -> Iterator[BackendTarget]:
    """A fresh schema on the test server, already migrated (a copy of one migrated
    template: tests/pg_template.py), reached directly or (for the ``pgbouncer`` parameter)
    through PgBouncer; the schema is dropped afterwards."""
    require_postgres()
    url = request.getfixturevalue("pgbouncer_url") if request.param == "pgbouncer" else PG_URL
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    create_migrated_schema(PG_URL, schema)
    yield BackendTarget("postgresql", url, schema)
    asyncio.run(drop_schema(schema))


@pytest.fixture(params=[*BACKENDS, PGBOUNCER])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """One backend's URL (and schema), fresh for this test."""
    name = request.param
    if name.endswith("-sealed"):
        from eventlog.crypto import init_keyring

        keyring = init_keyring(tmp_path / "keyring.json")
        if name == "sqlite-sealed":
            yield BackendTarget("sqlite", fresh_sqlite_url(tmp_path), keyring=str(keyring.path))
        else:
            for plain in postgres_target(request):
                plain.keyring = str(keyring.path)
                yield plain
    elif name == "memory":
        yield BackendTarget(name, "memory://")
    elif name == "sqlite":
        # A copy of one migrated, empty file (tests/sqlite_template.py), not a migration.
        yield BackendTarget(name, fresh_sqlite_url(tmp_path))
    elif name == "file":
        yield BackendTarget(name, f"file://{tmp_path / 'store'}")
    elif name == "citus":
        # Only as pytest.param("citus", marks=pytest.mark.citus): the distributed log on
        # the Citus cluster (tests/citus), a PostgreSQL target whose URL says so.
        from tests.citus import cluster

        yield from cluster.target()
    else:
        yield from postgres_target(request)


@pytest.fixture
async def log(target: BackendTarget) -> AsyncIterator[EventLog]:
    """An open log on each backend in turn."""
    async with open_log(target.url, **target.options()) as opened:
        yield opened


@pytest.fixture
def full_puts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread puts stored as the code before migration 0032 stored them (every channel's
    version written out): for the tests that write a log and then downgrade it below
    0032, which refuses a log holding compact puts (the older code would misread them)."""
    from eventlog.events.threads import ThreadCheckpointPut

    monkeypatch.setattr(ThreadCheckpointPut, "compact", False)
