"""``thread_checkpoints_by_thread`` holds only the subgraphs' checkpoints (migration 0027):
a main-graph put writes no entry into it, and a page of a thread across its namespaces,
the main graph's rows merged with the subgraphs' (`ViewQuery.split`), comes out exactly as
before: newest first by id, keyset-paged, at any limit, on SQLite and PostgreSQL, before
and after the upgrade."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from eventlog import EventLog, open_log
from eventlog.storage.migrate import head_revision
from tests.conftest import PG_URL
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite
from tests.test_thread_read_plans import T, _fill

# Written as the code before 0032 wrote it: these logs are downgraded below it.
pytestmark = pytest.mark.usefixtures("full_puts")

BEFORE = "0026_positions_without_sequence"
NAMESPACES = ("", "", "", "child:a", "child:b", "child:c|inner:d")


async def _filled(log: EventLog) -> list[tuple[str, str]]:
    """Thread "x": main-graph and subgraph checkpoints with interleaved ids (six
    namespaces' worth, the main graph's half of them), beside thread "y"; every
    (id, namespace) of "x", newest first."""
    rng = random.Random(41)
    by_namespace: dict[str, list[str]] = {}
    for n in range(90):
        by_namespace.setdefault(rng.choice(NAMESPACES), []).append(f"{n:04}")
    for namespace, ids in by_namespace.items():
        await _fill(log, "x", ids, namespace=namespace)
    await _fill(log, "y", [f"{n:04}" for n in range(0, 90, 3)])
    return sorted(((checkpoint_id, namespace) for namespace, ids in by_namespace.items()
                   for checkpoint_id in ids), reverse=True)


async def _pages(log: EventLog, limit: int, payloads: bool) -> list[tuple[str, str]]:
    """Every checkpoint of "x" across namespaces, read ``limit`` at a time."""
    found: list[tuple[str, str]] = []
    before = None
    while True:
        page = await log.checkpoints.threads.page(T, "x", before=before, limit=limit,
                                                  payloads=payloads)
        found += [(item.checkpoint_id, item.namespace) for item in page]
        if payloads:  # each row came with its own state
            assert all(item.state is not None for item in page)
        if len(page) < limit:
            return found
        before = page[-1].checkpoint_id


async def _check_pages(log: EventLog, expected: list[tuple[str, str]]) -> None:
    for limit in (1, 3, 10, 200):
        for payloads in (False, True):
            assert expected == await _pages(log, limit, payloads), (limit, payloads)
    unpaged = await log.checkpoints.threads.page(T, "x", payloads=False)
    assert expected == [(item.checkpoint_id, item.namespace) for item in unpaged]


def _sqlite_index(path: Path) -> tuple[str, int]:
    """The index's text and how many entries its b-tree holds."""
    database = sqlite3.connect(path)
    try:
        text = database.execute("SELECT sql FROM sqlite_schema WHERE name = "
                                "'thread_checkpoints_by_thread'").fetchone()[0]
        entries = database.execute(
            "SELECT coalesce(sum(ncell), 0) FROM dbstat "
            "WHERE name = 'thread_checkpoints_by_thread' AND pagetype = 'leaf'").fetchone()[0]
    finally:
        database.close()
    return str(text), int(entries)


async def test_sqlite_holds_only_subgraphs_and_pages_as_before(tmp_path: Path) -> None:
    """Only the subgraphs' rows are in the index; the merged pages equal the ids sorted;
    downgraded (the whole index) and upgraded again, the same."""
    path = tmp_path / "log.db"
    url = f"sqlite:///{path}"
    async with open_log(url) as log:
        expected = await _filled(log)
        await _check_pages(log, expected)
    subgraphs = sum(1 for _, namespace in expected if namespace)
    assert 0 < subgraphs < len(expected)
    text, entries = _sqlite_index(path)
    assert "WHERE length(namespace) > 0" in text
    assert subgraphs == entries

    migrate_sqlite(path, BEFORE, down=True)
    text, entries = _sqlite_index(path)
    assert "WHERE" not in text
    assert len(expected) + 30 == entries  # every row of both threads
    async with open_log(url) as log:
        assert head_revision() == log.schema_revision
        await _check_pages(log, expected)
    assert ("CREATE INDEX thread_checkpoints_by_thread ON thread_checkpoints "
            "(tenant_id, thread_id, checkpoint_id) WHERE length(namespace) > 0",
            subgraphs) == _sqlite_index(path)


async def _pg_index(schema: str) -> tuple[str, int]:
    connection = await asyncpg.connect(PG_URL)
    try:
        definition = await connection.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 "
            "AND indexname = 'thread_checkpoints_by_thread'", schema)
        await connection.execute(f'SET search_path = "{schema}"')
        # An index-only count through the index itself (it holds no more than that).
        await connection.execute("SET enable_seqscan = off")
        await connection.execute("SET enable_bitmapscan = off")
        plan: Any = await connection.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM thread_checkpoints "
            "WHERE length(namespace) > 0")
    finally:
        await connection.close()
    scan = json.loads(plan)[0]["Plan"]["Plans"][0]
    assert scan.get("Index Name") == "thread_checkpoints_by_thread", scan
    return str(definition), int(scan["Actual Rows"])


async def test_postgres_holds_only_subgraphs_and_pages_as_before(pg_schema: str) -> None:
    """The same on PostgreSQL: the index is partial and holds the subgraphs' rows only
    (counted through it), and the merged pages are the ids sorted."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        expected = await _filled(log)
        await _check_pages(log, expected)
    subgraphs = sum(1 for _, namespace in expected if namespace)
    definition, entries = await _pg_index(pg_schema)
    assert definition.endswith("WHERE (length(namespace) > 0)"), definition
    assert subgraphs == entries


@pytest.mark.parametrize("limit", [1, 5])
async def test_memory_pages_agree(limit: int) -> None:
    """The memory backend (which has no index) pages the same thread the same way."""
    async with open_log("memory://") as log:
        expected = await _filled(log)
        assert expected == await _pages(log, limit, payloads=True)
