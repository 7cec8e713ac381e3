"""The SQL schema: migrations create exactly the metadata; unknown revisions are refused."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import SchemaError, UnknownSchemaRevision, open_log
from eventlog.storage.migrate import head_revision
from eventlog.storage.schema import build_metadata
from tests.conftest import PG_URL, require_postgres
from tests.events import Noted

ROOT = Path(__file__).resolve().parent.parent
PG_ASYNC = "postgresql+asyncpg://" + PG_URL.split("://", 1)[1]


def differences(connection: sa.Connection, dialect: str, schema: str | None) -> list[Any]:
    """What Alembic autogenerate would change to make the database match the metadata."""
    opts: dict[str, Any] = {"compare_type": True, "compare_server_default": True}
    if schema is not None:
        opts.update(
            include_schemas=True,
            version_table_schema=schema,
            include_name=lambda name, kind, parent: kind != "schema" or name == schema,
        )
    context = MigrationContext.configure(connection, opts=opts)
    return list(compare_metadata(context, build_metadata(dialect, schema)))


async def stamp(url: str, revision: str, schema: str | None = None) -> None:
    """Overwrite the database's alembic_version behind the library's back."""
    engine = create_async_engine(url)
    table = f'"{schema}".alembic_version' if schema else "alembic_version"
    try:
        async with engine.begin() as connection:
            await connection.execute(sa.text(f"UPDATE {table} SET version_num = :r"),
                                     {"r": revision})
    finally:
        await engine.dispose()


async def test_sqlite_upgrade_matches_the_metadata(tmp_path: Path) -> None:
    """An empty SQLite file upgraded by open_log has exactly the declared tables."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        assert head_revision() == log.schema_revision
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.connect() as connection:
            found = await connection.run_sync(differences, "sqlite", None)
    finally:
        await engine.dispose()
    assert [] == found


@pytest.mark.filterwarnings("ignore:Did not recognize type 'xid8'")
async def test_postgres_upgrade_matches_the_metadata(pg_schema: str) -> None:
    """A fresh PostgreSQL schema upgraded by open_log has exactly the declared tables.

    SQLAlchemy cannot reflect xid8, so autogenerate skips that column's type; the
    catalogue is asked directly.
    """
    async with open_log(PG_URL, schema=pg_schema) as log:
        assert head_revision() == log.schema_revision
    engine = create_async_engine(PG_ASYNC)
    try:
        async with engine.connect() as connection:
            found = await connection.run_sync(differences, "postgresql", pg_schema)
            tx_id = (await connection.execute(sa.text(
                "SELECT data_type, column_default, is_nullable FROM information_schema.columns "
                "WHERE table_schema = :s AND table_name = 'events' AND column_name = 'tx_id'"
            ), {"s": pg_schema})).all()
    finally:
        await engine.dispose()
    assert [] == found
    assert [("xid8", "pg_current_xact_id()", "NO")] == [tuple(row) for row in tx_id]


async def test_sqlite_with_unknown_revision_is_refused(tmp_path: Path) -> None:
    """A SQLite file stamped with a revision this code lacks: UnknownSchemaRevision."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url):
        pass
    await stamp(f"sqlite+aiosqlite:///{tmp_path / 'log.db'}", "9999_from_the_future")
    with pytest.raises(UnknownSchemaRevision) as caught:
        async with open_log(url):
            pass
    assert ("9999_from_the_future", head_revision()) == (caught.value.found, caught.value.known)
    assert "9999_from_the_future" in str(caught.value)
    assert head_revision() in str(caught.value)


async def test_postgres_with_unknown_revision_is_refused(pg_schema: str) -> None:
    """A PostgreSQL schema stamped with an unknown revision is refused, naming both."""
    async with open_log(PG_URL, schema=pg_schema):
        pass
    await stamp(PG_ASYNC, "9999_from_the_future", pg_schema)
    for upgrade in (True, False):
        with pytest.raises(UnknownSchemaRevision) as caught:
            async with open_log(PG_URL, schema=pg_schema, upgrade=upgrade):
                pass
        assert ("9999_from_the_future", head_revision()) == (
            caught.value.found, caught.value.known
        )


async def test_refused_database_is_left_as_it_was(tmp_path: Path) -> None:
    """Refusing an unknown revision changes nothing: the stamp stays."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url):
        pass
    await stamp(f"sqlite+aiosqlite:///{tmp_path / 'log.db'}", "9999_from_the_future")
    for _ in range(2):
        with pytest.raises(UnknownSchemaRevision):
            async with open_log(url):
                pass


async def test_sqlite_without_upgrade_on_an_empty_database_fails(tmp_path: Path) -> None:
    """upgrade=False on an empty SQLite file raises SchemaError and creates no tables."""
    path = tmp_path / "log.db"
    sqlite3.connect(path).close()  # an empty database file (a missing one is refused earlier)
    with pytest.raises(SchemaError, match=head_revision()):
        async with open_log(f"sqlite:///{path}", upgrade=False):
            pass
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda sync: sa.inspect(sync).get_table_names())
    finally:
        await engine.dispose()
    assert [] == tables


async def test_postgres_without_upgrade_on_an_empty_schema_fails(pg_schema: str) -> None:
    """upgrade=False on a schema that does not exist raises SchemaError."""
    with pytest.raises(SchemaError) as caught:
        async with open_log(PG_URL, schema=pg_schema, upgrade=False):
            pass
    assert not isinstance(caught.value, UnknownSchemaRevision)


async def test_without_upgrade_an_up_to_date_database_opens(tmp_path: Path) -> None:
    """upgrade=False is fine once the schema is current."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url):
        pass
    async with open_log(url, upgrade=False) as log:
        await log.append("t", "s", [Noted(text="a")])
        assert head_revision() == log.schema_revision


@pytest.mark.slow
def test_processes_creating_one_fresh_postgres_schema_all_succeed(pg_schema: str) -> None:
    """Three processes released at once onto a fresh schema all open it and append."""
    require_postgres()
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.procs.opener", PG_URL, pg_schema, f"t{n}"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
        )
        for n in range(3)
    ]
    for child in children:
        assert "ready" == child.stdout.readline().strip()  # type: ignore[union-attr]
    for child in children:
        child.stdin.write("go\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
    outcomes = [child.communicate(timeout=60) for child in children]
    results = [(child.returncode, out.strip())
               for child, (out, _err) in zip(children, outcomes, strict=True)]
    assert [(0, head_revision())] * 3 == results, [err for _out, err in outcomes]
    asyncio.run(_assert_three_streams(pg_schema))


async def _assert_three_streams(schema: str) -> None:
    async with open_log(PG_URL, schema=schema) as log:
        assert (True, 3) == ((await log.verify()).ok, (await log.verify()).streams)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (built,) = out.glob("*.whl")
    return built


def test_wheel_ships_migrations_inside_eventlog(wheel: Path) -> None:
    """The wheel carries eventlog/migrations (env.py and every version) and no top-level
    migrations package."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    versions = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
    assert ({"eventlog", "projections"}, True) == (tops, "eventlog/migrations/env.py" in names)
    assert versions == sorted(
        name.rsplit("/", 1)[1] for name in names
        if name.startswith("eventlog/migrations/versions/") and name.endswith(".py")
    )
    assert "eventlog/py.typed" in names


def test_wheel_ships_the_consoles_assets(wheel: Path) -> None:
    """`eventlog serve`'s templates, style sheet and script are in the wheel (no CDN: an
    air-gapped host has what the pages load)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "eventlog" / "cli" / "serve"
    assets = sorted(str(path.relative_to(ROOT)) for folder in ("templates", "static")
                    for path in (package / folder).iterdir())
    assert len(assets) >= 8
    assert [] == [asset for asset in assets if asset not in names]


def test_installed_wheel_migrates_from_its_own_scripts(wheel: Path, tmp_path: Path) -> None:
    """Unpacked away from the repo, the package upgrades a fresh SQLite file to head."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    script = (
        "import asyncio, eventlog\n"
        "from eventlog.storage.migrate import migrations_dir\n"
        "async def main():\n"
        "    async with eventlog.open_log('sqlite:///log.db') as log:\n"
        "        print(log.schema_revision, migrations_dir(), eventlog.__file__)\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(site)}, timeout=120, check=True,
    )
    revision, migrations, package = result.stdout.splitlines()[-1].split()
    assert (head_revision(), str(site / "eventlog" / "migrations")) == (revision, migrations)
    assert package.startswith(str(site))


async def _session_at_revision_4(url: str, schema: str | None) -> None:
    """A database migrated only to 0004 holding one session of two checkpoints, its view
    rows written as that revision's code wrote them (no latest parent or metadata)."""
    from alembic import command

    from eventlog.storage.migrate import alembic_config

    dialect = "postgresql" if schema else "sqlite"
    metadata = build_metadata(dialect, schema)
    key = f"{schema}." if schema else ""
    checkpoints, sessions = metadata.tables[f"{key}checkpoints"], metadata.tables[
        f"{key}checkpoint_sessions"]
    engine = create_async_engine(url)
    run = uuid.UUID("00000000-0000-4000-8000-000000000001")
    when = datetime(2030, 1, 1, tzinfo=UTC)
    try:
        async with engine.begin() as connection:
            if schema:
                await connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
            await connection.run_sync(lambda sync: command.upgrade(
                alembic_config(sync, schema, metadata), "0004_threads"))
            for version, parent in ((1, None), (2, "c1")):
                await connection.execute(sa.insert(checkpoints).values(
                    tenant_id="t", session_id="s", version=version, position=version,
                    run_id=run, checkpoint_id=f"c{version}", parent_id=parent, step=version,
                    state_digest=bytes(32), state_encoding="json", state_size=2,
                    metadata=f'{{"n": {version}}}', recorded_at=when))
            await connection.execute(sa.insert(sessions).values(
                tenant_id="t", session_id="s", latest_version=2, latest_position=2,
                latest_checkpoint_id="c2", latest_run_id=run, latest_step=2, updated_at=when))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_upgrading_to_0005_gives_existing_sessions_their_latest_record(
    dialect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Sessions written before 0005 take their latest checkpoint's parent and metadata,
    so ``latest`` (which now reads the session row) answers as it did."""
    if dialect == "sqlite":
        schema, url, log_url = None, f"sqlite+aiosqlite:///{tmp_path / 'log.db'}", \
            f"sqlite:///{tmp_path / 'log.db'}"
    else:
        schema, url, log_url = request.getfixturevalue("pg_schema"), PG_ASYNC, PG_URL
    await _session_at_revision_4(url, schema)
    options = {"schema": schema} if schema else {}
    async with open_log(log_url, **options) as log:
        latest = await log.checkpoints.latest("t", "s")
        listed = await log.checkpoints.list("t", "s")
    assert latest is not None
    assert (latest.checkpoint_id, latest.parent_id, latest.metadata, latest.step) == (
        "c2", "c1", {"n": 2}, 2)
    assert latest == listed[-1]


async def test_postgres_text_columns_compare_bytewise(pg_schema: str) -> None:
    """Every text column of an upgraded PostgreSQL schema, and of the metadata the
    backend builds its statements from, has the "C" collation: byte order, as SQLite and
    the memory backend compare (autogenerate does not compare collations)."""
    async with open_log(PG_URL, schema=pg_schema):
        pass
    connection = await asyncpg.connect(PG_URL)
    try:
        rows = await connection.fetch(
            "SELECT table_name, column_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = $1 AND data_type IN ('text', 'character varying') "
            "AND table_name != 'alembic_version'", pg_schema)
    finally:
        await connection.close()
    assert len(rows) > 40
    assert [] == [tuple(row) for row in rows if row["collation_name"] != "C"]
    declared = [
        (table.name, column.name, column.type.collation)
        for table in build_metadata("postgresql", pg_schema).tables.values()
        for column in table.columns if isinstance(column.type, sa.String)
    ]
    assert len(declared) == len(rows)
    assert [] == [entry for entry in declared if entry[2] != "C"]


async def _thread_at_revision_6(url: str, schema: str | None) -> None:
    """A database migrated only to 0006 holding one thread's checkpoints in two
    namespaces and another thread's newer one, as that revision's code wrote them."""
    from alembic import command

    from eventlog.storage.migrate import alembic_config

    metadata = build_metadata("postgresql" if schema else "sqlite", schema)
    checkpoints = metadata.tables[f"{schema}.thread_checkpoints" if schema
                                  else "thread_checkpoints"]
    engine = create_async_engine(url)
    when = datetime(2030, 1, 1, tzinfo=UTC)
    try:
        async with engine.begin() as connection:
            if schema:
                await connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
            await connection.run_sync(lambda sync: command.upgrade(
                alembic_config(sync, schema, metadata), "0006_bytewise_text"))
            for version, (thread, namespace, checkpoint_id) in enumerate(
                    (("a", "", "c1"), ("a", "sub", "c2"), ("a", "", "c3"), ("b", "", "c9")),
                    start=1):
                await connection.execute(sa.insert(checkpoints).values(
                    tenant_id="t", thread_id=thread, namespace=namespace,
                    checkpoint_id=checkpoint_id, version=version, position=version,
                    state_encoding="json", state_digest=bytes(32), channels="{}",
                    metadata="{}", recorded_at=when))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_upgrading_to_0007_indexes_existing_threads(
    dialect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A log written at 0006 upgrades to head: its thread checkpoints gain
    ``thread_checkpoints_by_thread`` and read as before, a thread's page across its
    namespaces newest first."""
    if dialect == "sqlite":
        schema, url, log_url = None, f"sqlite+aiosqlite:///{tmp_path / 'log.db'}", \
            f"sqlite:///{tmp_path / 'log.db'}"
    else:
        schema, url, log_url = request.getfixturevalue("pg_schema"), PG_ASYNC, PG_URL
    await _thread_at_revision_6(url, schema)
    options = {"schema": schema} if schema else {}
    async with open_log(log_url, **options) as log:
        assert head_revision() == log.schema_revision
        page = await log.checkpoints.threads.page("t", "a", payloads=False)
    assert [("c3", ""), ("c2", "sub"), ("c1", "")] == [
        (c.checkpoint_id, c.namespace) for c in page]
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            indexes = await connection.run_sync(lambda sync: sa.inspect(sync).get_indexes(
                "thread_checkpoints", schema=schema))
    finally:
        await engine.dispose()
    assert ["tenant_id", "thread_id", "checkpoint_id"] == next(
        index["column_names"] for index in indexes
        if index["name"] == "thread_checkpoints_by_thread")
