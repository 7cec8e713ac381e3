"""The shipped contract suite (the log, checkpoints, threads, interrupts) on the Citus
cluster, every table distributed by tenant: the same class a backend author writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventlog.testing import BackendContract
from tests.citus import cluster

pytestmark = pytest.mark.citus


class TestCitusBackend(BackendContract):
    """postgresql:// on the coordinator with ``distributed=True``, an empty distributed schema
    per test (tests/citus/conftest.py)."""

    schema = ""

    @pytest.fixture(autouse=True)
    def _fresh_schema(self, distributed_schema: str) -> None:
        self.schema = distributed_schema

    def backend_url(self, tmp_path: Path) -> str:
        return cluster.URL

    def open_options(self) -> dict[str, Any]:
        return {"schema": self.schema, "distributed": True}
