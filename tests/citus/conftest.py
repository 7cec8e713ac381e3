"""The tests here run on the Citus cluster (each module is marked ``citus``: ``pytest -m
citus``), each in a schema of its own on the coordinator: a fresh one (dropped afterwards) for
the tests of migrating and distributing, an emptied one from the pool otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.citus import cluster


@pytest.fixture
def citus_schema() -> Iterator[str]:
    """A fresh schema name on the running cluster (nothing in it yet: the test's first open
    makes its tables, from the head script, and distributes them), dropped after the test."""
    cluster.ensure_cluster()
    schema = cluster.fresh_schema()
    yield schema
    asyncio.run(cluster.drop_schema(schema))


@pytest.fixture
def distributed_schema() -> Iterator[str]:
    """A schema on the running cluster already distributed at the current revision, every
    table empty (`cluster.pooled_schema`)."""
    yield from cluster.pooled_schema()
