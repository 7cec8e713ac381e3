"""The tests here run on the Citus cluster (each module is marked ``citus``: ``pytest -m
citus``), each in a schema of its own on the coordinator, dropped afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.citus import cluster


@pytest.fixture
def citus_schema() -> Iterator[str]:
    """A fresh schema name on the running cluster, dropped after the test."""
    cluster.ensure_cluster()
    schema = cluster.fresh_schema()
    yield schema
    asyncio.run(cluster.drop_schema(schema))
