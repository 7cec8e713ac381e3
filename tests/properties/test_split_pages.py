"""A page of a thread across its namespaces, read as the main graph's rows merged with the
subgraphs' (`ViewQuery.split`, migration 0027), is every checkpoint of the thread newest
first by id, whatever the namespaces, the interleaving of ids, the limit and the keyset:
on SQLite and PostgreSQL, against the ids sorted."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import open_log
from tests.conftest import PG_URL
from tests.test_thread_read_plans import T, _fill

pytestmark = pytest.mark.properties

NAMESPACES = st.sampled_from(["", "", "child:a", "child:b|inner:c", "z"])
THREADS = itertools.count()

checkpoints = st.lists(st.tuples(st.integers(0, 999), NAMESPACES), min_size=1, max_size=30,
                       unique_by=lambda item: item[0])
"""A thread's checkpoints: (id, namespace), ids unique across the thread."""


async def _pages(url: str, options: dict[str, str], rows: list[tuple[int, str]], limit: int,
                 payloads: bool) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Write ``rows`` into a thread of its own; every page of it, and what they must be."""
    thread = f"p{next(THREADS)}"
    by_namespace: dict[str, list[str]] = {}
    for number, namespace in rows:
        by_namespace.setdefault(namespace, []).append(f"{number:04}")
    found: list[tuple[str, str]] = []
    async with open_log(url, **options) as log:
        for namespace, ids in by_namespace.items():
            await _fill(log, thread, sorted(ids), namespace=namespace)
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        before = None
        while True:
            page = await threads.page(T, thread, before=before, limit=limit,
                                      payloads=payloads)
            found += [(item.checkpoint_id, item.namespace) for item in page]
            if len(page) < limit:
                break
            before = page[-1].checkpoint_id
    expected = sorted(((f"{number:04}", namespace) for number, namespace in rows),
                      reverse=True)
    return found, expected


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=checkpoints, limit=st.integers(1, 12), payloads=st.booleans())
def test_sqlite_pages_are_the_ids_sorted(tmp_path: Path, rows: list[tuple[int, str]],
                                         limit: int, payloads: bool) -> None:
    found, expected = asyncio.run(_pages(f"sqlite:///{tmp_path / 'log.db'}", {}, rows, limit,
                                         payloads))
    assert expected == found


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=checkpoints, limit=st.integers(1, 12), payloads=st.booleans())
def test_postgres_pages_are_the_ids_sorted(migrated_pg_schema: str,
                                           rows: list[tuple[int, str]], limit: int,
                                           payloads: bool) -> None:
    found, expected = asyncio.run(_pages(PG_URL, {"schema": migrated_pg_schema}, rows, limit,
                                         payloads))
    assert expected == found
