"""The SQL stores log their schema's creation through structlog. (The append and conflict
logging contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from eventlog import open_log
from eventlog.storage.migrate import shipped_head
from tests.conftest import PG_URL, BackendTarget


@pytest.fixture(params=["sqlite", "postgresql"])
def empty(request: pytest.FixtureRequest, tmp_path: Path) -> BackendTarget:
    """A store no log has opened yet (the ``target`` fixture's PostgreSQL schemas come
    migrated already)."""
    if request.param == "sqlite":
        return BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")
    return BackendTarget("postgresql", PG_URL, str(request.getfixturevalue("pg_schema")))


async def test_first_open_logs_schema_created(empty: BackendTarget) -> None:
    """Opening an empty database logs "schema_created" once, at the newest revision (the
    shipped head script made it); reopening logs nothing."""
    target = empty
    with capture_logs() as first:
        async with open_log(target.url, **target.options()):
            pass
    with capture_logs() as second:
        async with open_log(target.url, **target.options()):
            pass
    created = [entry for entry in first if entry["event"] == "schema_created"]
    assert [shipped_head()] == [entry["revision"] for entry in created]
    assert [] == [entry for entry in first if entry["event"] == "schema_upgraded"]
    assert [] == [entry for entry in second if entry["event"].startswith("schema_")]
