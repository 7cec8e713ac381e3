"""The shipped contract suite, `eventlog.testing.BackendContract`, on each built-in backend.

Each class is what a backend author writes for their own backend (the guide's "Writing a
backend", docs/writing-a-backend.md); PostgreSQL runs every test in a fresh schema, dropped
afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventlog.testing import BackendContract
from tests.conftest import PG_URL
from tests.sqlite_template import fresh_sqlite_url


class TestMemoryBackend(BackendContract):
    """memory://: every store is new and gone at close."""

    persistent = False

    def backend_url(self, tmp_path: Path) -> str:
        return "memory://"


class TestSqliteBackend(BackendContract):
    """sqlite:///: a database file in the test's directory (a copy of one migrated, empty
    file: tests/sqlite_template.py)."""

    def backend_url(self, tmp_path: Path) -> str:
        return fresh_sqlite_url(tmp_path)


class TestFileBackend(BackendContract):
    """file:///: a store directory in the test's directory."""

    def backend_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path / 'store'}"


@pytest.mark.postgres
class TestPostgresqlBackend(BackendContract):
    """postgresql://: the test server, each test in a schema of its own."""

    schema = ""

    @pytest.fixture(autouse=True)
    def _fresh_schema(self, migrated_pg_schema: str) -> None:
        """Skips without a server (fails under CI); the schema, a copy of the migrated
        template (tests/pg_template.py), is dropped after the test."""
        self.schema = migrated_pg_schema

    def backend_url(self, tmp_path: Path) -> str:
        return PG_URL

    def open_options(self) -> dict[str, Any]:
        return {"schema": self.schema}


@pytest.mark.pgbouncer
class TestPgbouncerBackend(TestPostgresqlBackend):
    """postgresql:// through PgBouncer in transaction mode (``?pool_mode=transaction``):
    every server connection serves this log for one transaction at a time."""

    url = ""

    @pytest.fixture(autouse=True)
    def _through_pgbouncer(self, pgbouncer_url: str) -> None:
        """Skips without pgbouncer (fails under CI); PgBouncer runs for the session."""
        self.url = pgbouncer_url

    def backend_url(self, tmp_path: Path) -> str:
        return self.url
