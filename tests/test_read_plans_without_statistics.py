"""Every hot read takes its index whatever the planner's statistics say (issue 41).

Two tenants' shapes. The big tenant: one thread of 4,000 checkpoints (and a subgraph
namespace of 200 beside them), 100 threads of 10 written after it (their ids all newer),
a session of 1,000 records and 50 of 4 (each of a run of its own). The small tenant, the
one issue 41 measured: a 10-step thread beside 60 others (610 rows), where PostgreSQL
read the thread's latest through ``thread_checkpoints_by_run`` by the tenant alone.

Each hot read the stores make (the latest checkpoint of a thread, one by id, a page, a
keyset page, a page across namespaces, with their channel values and pending writes;
blobs by digest; a session's latest, a record by id, a small session's records, a small
run's) is captured as the backend runs it and explained on the real server, on tables
never analyzed (a fresh deployment or a bulk import with autovacuum off or behind:
autovacuum is switched off for the test's tables) and again after ``ANALYZE``, under a
custom and a generic plan (asyncpg prepares every statement). A plan fails when the
read's table is not read through the index named for it, when a scan of a table drops
more than `MAX_REMOVED` rows a loop by filter or index recheck, or when a table holding
rows is scanned whole (a table of at most `TINY` rows may be read any way). On SQLite,
``EXPLAIN QUERY PLAN`` of the same reads with no statistics, after ``PRAGMA optimize`` and
after ``ANALYZE`` must search the same indexes and sort nothing in a temporary b-tree.
A log at the revision before migration 0024 upgrades in place, and Citus keeps the tenant
an equality.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from eventlog import CheckpointRecord, EventLog, open_log
from eventlog.checkpoints.threads import runs_query
from eventlog.storage.migrate import head_revision
from eventlog.storage.sqlite import encode_value
from projections.query import ViewQuery
from tests.conftest import PG_URL
from tests.test_thread_read_plans import T, _fill, sql_literal


@dataclass(frozen=True)
class Shape:
    """A tenant: a big thread (and a subgraph namespace) beside small threads, a big
    session beside small ones."""

    big: int
    child: int
    small_threads: int
    session: int

    @property
    def ids(self) -> list[str]:
        return [f"1{step:05}" for step in range(self.big)]


SHAPES = {
    "big tenant": Shape(big=4000, child=200, small_threads=100, session=1000),
    # The tenant of issue 41's measurement: a 10-step thread beside 60 (610 rows), where
    # PostgreSQL read the thread's latest through thread_checkpoints_by_run.
    "small tenant": Shape(big=10, child=5, small_threads=60, session=10),
}
RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")
SMALL_RUN = uuid.UUID("00000000-0000-4000-8000-000000000002")
MAX_REMOVED = 10
"""Rows a scan may drop by filter: a by-id read may meet a few other threads' rows."""
TABLES = ("thread_checkpoints", "thread_channel_values", "thread_writes", "blobs",
          "checkpoints", "checkpoint_sessions", "stream_heads", "events")
EXPECTED: dict[str, tuple[str, str | set[str]]] = {
    "latest": ("thread_checkpoints", "thread_checkpoints_pkey"),
    "latest, subgraph": ("thread_checkpoints", "thread_checkpoints_pkey"),
    "latest, small thread": ("thread_checkpoints", "thread_checkpoints_pkey"),
    # With the elements the store guesses (`ViewQuery.blobs`): every blob by its key.
    "latest, guessed blobs": ("blobs", "blobs_pkey"),
    "by id": ("thread_checkpoints", "thread_checkpoints_pkey"),  # or by_thread: _ALSO
    "page": ("thread_checkpoints", "thread_checkpoints_pkey"),
    "page before": ("thread_checkpoints", "thread_checkpoints_pkey"),
    # Two halves merged: the main namespace by the key, the subgraphs by the partial index.
    "page, every namespace": ("thread_checkpoints",
                              {"thread_checkpoints_pkey", "thread_checkpoints_by_thread"}),
    "page before, every namespace": ("thread_checkpoints",
                                     {"thread_checkpoints_pkey",
                                      "thread_checkpoints_by_thread"}),
    "page, small thread": ("thread_checkpoints", "thread_checkpoints_pkey"),
    "run of one checkpoint": ("thread_checkpoints", "thread_checkpoints_by_run"),
    "runs to remove": ("thread_checkpoints", "thread_checkpoints_by_run"),
    "blobs": ("blobs", "blobs_pkey"),
    "blob sizes": ("blobs", "blobs_pkey"),
    "session latest": ("checkpoint_sessions", "checkpoint_sessions_pkey"),
    "session record by id": ("checkpoints", "checkpoints_by_checkpoint_id"),
    "session records": ("checkpoints", "checkpoints_pkey"),
    "run records": ("checkpoints", "checkpoints_by_run"),
    "newest events": ("events", "events_tenant_log_order"),
    "newest events after": ("events", "events_tenant_log_order"),
}
"""Each hot read: the table it reads and the index it must read it through."""
_ALSO = {"newest events after": {"events_tenant_log_order", "events_pkey"},  # its event
"by id": {"thread_checkpoints_by_thread"},
         "session records": {"checkpoints_by_checkpoint_id", "checkpoints_by_parent"}}
"""Other indexes that seek the same rows: a read by the whole key through an index that
holds the thread and the id; a session's records (a bitmap
scan, then a sort) through any index led by (tenant_id, session_id). PostgreSQL chooses
among them by the statistics; each reads the read's own rows only."""
UNSORTED = {"newest events", "newest events after"}
"""Walks that must stop after their LIMIT: no Sort may read the tenant's rows first."""
TINY = 256
"""Rows of a table of a few pages, which any plan reads about as fast as a seek: with no
statistics PostgreSQL's estimates for it are all one row, and the index whose b-tree is
shortest wins the tie (a small tenant's session table read through its primary key)."""


async def _filled(log: EventLog, shape: Shape) -> tuple[list[bytes], str]:
    """The tenant; the digests of 11 of the big thread's values, and the id of an old
    record of the big session."""
    await _fill(log, "big", shape.ids)
    await _fill(log, "big", [f"0{step:05}" for step in range(shape.child)],
                namespace="child:1")
    for n in range(shape.small_threads):
        await _fill(log, f"small-{n:03}", [f"2{n:03}{step:03}" for step in range(10)])
    # Agent Framework's shape: each checkpoint its own run (its id), a workflow a thread.
    await _fill(log, "workflow", [f"3{step:05}" for step in range(shape.small_threads)],
                run_key=None)
    store = log.checkpoints
    first = None
    for step in range(shape.session):
        made = await store.create(CheckpointRecord(
            tenant_id=T, session_id="session-big", run_id=RUN, step=step, state={"n": step}))
        first = first or made.checkpoint_id
    for n in range(50):
        for step in range(4):
            await store.create(CheckpointRecord(
                tenant_id=T, session_id=f"session-{n}", step=step, state={"n": n},
                run_id=uuid.UUID(int=n + 2) if n != 7 else SMALL_RUN))
    rows = await log.query(ViewQuery("thread_channel_values",
                                     {"tenant_id": T, "thread_id": "big"},
                                     columns=("digest",), limit=11))
    assert first is not None
    return [row["digest"] for row in rows], first


def _reads(log: EventLog, shape: Shape, digests: list[bytes], record: str
           ) -> dict[str, Callable[[], Awaitable[object]]]:
    threads, sessions = log.checkpoints.threads, log.checkpoints
    ids = shape.ids
    return {
        "latest": lambda: threads.get(T, "big"),
        "latest, subgraph": lambda: threads.get(T, "big", namespace="child:1"),
        "latest, small thread": lambda: threads.get(T, "small-005"),
        "latest, guessed blobs": lambda: _guessed_latest(log, digests),
        "by id": lambda: threads.get(T, "big", ids[len(ids) // 4]),
        "page": lambda: threads.page(T, "big", namespace="", limit=10),
        "page before": lambda: threads.page(T, "big", namespace="", before=ids[-3],
                                            limit=10),
        "page, every namespace": lambda: threads.page(T, "big", limit=10),
        "page before, every namespace": lambda: threads.page(
            T, "big", before=ids[len(ids) // 2], limit=10),
        "page, small thread": lambda: threads.page(T, "small-005", namespace="", limit=10),
        "run of one checkpoint": lambda: threads.of_run(T, "300007"),
        # What delete_runs reads first, a run at a time (the partial index, 0031).
        "runs to remove": lambda: log.query(runs_query(T, "300011")),
        "blobs": lambda: log.get_blobs(T, digests),
        "blob sizes": lambda: log.reader.blob_sizes(T, digests),
        "session latest": lambda: sessions.latest(T, "session-big"),
        "session record by id": lambda: sessions.read_encoded(T, "session-big", record),
        "session records": lambda: sessions.list(T, "session-7"),
        "run records": lambda: sessions.list_by_run(T, SMALL_RUN),
        # The console's newest-first list (`eventlog serve`): the tenant's log order
        # backwards, from the top and from an event in the middle.
        "newest events": lambda: log.events_newest_first(T, None, 200),
        "newest events after": lambda: log.events_newest_first(T, len(ids) // 2, 200),
    }


async def _guessed_latest(log: EventLog, digests: list[bytes]) -> object:
    """The big thread's latest, the store guessing it holds ``digests`` (as if it had put
    them: `ThreadCheckpoints._guess`)."""
    threads: Any = log.checkpoints.threads
    threads._guesses[(T, "big", "")] = {"messages": tuple(("json", d) for d in digests)}
    return await threads.get(T, "big")


async def _captured_postgres(log: EventLog, reads: dict[str, Callable[[], Awaitable[object]]]
                             ) -> list[tuple[str, str, list[Any]]]:
    """(read, SQL, parameters) of every statement the reads send."""
    storage: Any = log.reader
    fetch = storage._fetch
    seen: list[tuple[str, str, list[Any]]] = []
    name = ""

    async def spy(operation: str, sql: str, params: list[Any], **options: Any) -> list[Any]:
        seen.append((name, sql, params))
        return list(await fetch(operation, sql, params, **options))

    storage._fetch = spy
    try:
        for name, read in reads.items():  # noqa: B007  # spy reads the current name
            await read()
    finally:
        del storage._fetch
    assert {read for read, _, _ in seen} == set(reads)
    return seen


def _scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan's scans of a table, each with its index (a bitmap scan's, from the
    bitmap index scan under it)."""
    found = []
    if "Relation Name" in plan:
        indexes = [child.get("Index Name") for child in plan.get("Plans", [])
                   if child["Node Type"] == "Bitmap Index Scan"]
        found.append({**plan, "Index Name": indexes[0]} if len(indexes) == 1 else plan)
    for child in plan.get("Plans", []):
        found += _scans(child)
    return found


def _sorts(plan: dict[str, Any]) -> bool:
    return plan["Node Type"] in ("Sort", "Incremental Sort") or any(
        _sorts(child) for child in plan.get("Plans", []))


def _problems(read: str, plan: dict[str, Any], sizes: dict[str, int]) -> list[str]:
    """What is wrong with one read's plan (see the module docstring); a table of at
    most `TINY` rows may be read any way."""
    problems = []
    table, index = EXPECTED[read]
    wanted = index if isinstance(index, set) else {index}
    scans = _scans(plan)
    used = {scan.get("Index Name") for scan in scans if scan["Relation Name"] == table}
    if sizes.get(table, 0) > TINY and used != wanted and not used <= _ALSO.get(read, set()):
        problems.append(f"reads {table} through {used}, not {index}")
    if read in UNSORTED and _sorts(plan):
        problems.append("sorts the rows before its LIMIT instead of reading the index's order")
    for scan in scans:
        relation = scan["Relation Name"]
        if sizes.get(relation, 0) <= TINY:
            continue
        dropped = (scan.get("Rows Removed by Filter", 0)
                   + scan.get("Rows Removed by Index Recheck", 0))
        if dropped > MAX_REMOVED * scan.get("Actual Loops", 1):
            problems.append(f"{scan['Node Type']} on {relation} ({scan.get('Index Name')}) "
                            f"removed {dropped} rows by filter {scan.get('Filter')}")
        if scan["Node Type"] == "Seq Scan":
            problems.append(f"scans {relation} ({sizes[relation]} rows) whole")
    return problems


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("analyzed", [False, True], ids=["never analyzed", "analyzed"])
async def test_postgres_hot_reads_take_their_index(pg_schema: str, analyzed: bool,
                                                   shape: str) -> None:
    """Custom and generic plans of every hot read seek through the index named for it and
    drop no more than a few rows, with statistics and without."""
    connection = await asyncpg.connect(PG_URL)
    try:
        async with open_log(PG_URL, schema=pg_schema) as log:
            await connection.execute(f'SET search_path = "{pg_schema}"')
            for table in TABLES:  # no autovacuum run may analyze them behind the test
                await connection.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
            digests, record = await _filled(log, SHAPES[shape])
            if analyzed:
                await connection.execute("ANALYZE")
            stale = await connection.fetch(
                "SELECT relname FROM pg_stat_user_tables WHERE schemaname = $1 "
                "AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)", pg_schema)
            assert bool(stale) == analyzed
            sizes = {table: int(await connection.fetchval(f"SELECT count(*) FROM {table}"))
                     for table in TABLES}
            captured = await _captured_postgres(
                log, _reads(log, SHAPES[shape], digests, record))
        problems = []
        for number, (read, sql, params) in enumerate(captured):
            await connection.execute(f"PREPARE q{number} AS {sql}")
            arguments = ", ".join(map(sql_literal, params))
            # The backend reads its ordered walks with sorting off (`_fetch_unsorted`).
            sorting = "off" if read in UNSORTED else "on"
            await connection.execute(f"SET enable_sort = {sorting}")
            for mode in ("force_custom_plan", "force_generic_plan"):
                await connection.execute(f"SET plan_cache_mode = {mode}")
                explained = await connection.fetchval(
                    f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE q{number}({arguments})")
                problems += [f"{read} ({mode}): {problem}" for problem in
                             _problems(read, json.loads(explained)[0]["Plan"], sizes)]
    finally:
        await connection.close()
    assert not problems, "\n".join(problems)


SQLITE_EXPECTED: dict[str, tuple[str, str | set[str]]] = {
    "latest": ("thread_checkpoints", "PRIMARY KEY"),
    "latest, subgraph": ("thread_checkpoints", "PRIMARY KEY"),
    "latest, small thread": ("thread_checkpoints", "PRIMARY KEY"),
    "by id": ("thread_checkpoints", "PRIMARY KEY"),
    "page": ("thread_checkpoints", "PRIMARY KEY"),
    "page before": ("thread_checkpoints", "PRIMARY KEY"),
    "page, every namespace": ("thread_checkpoints",
                              {"PRIMARY KEY", "thread_checkpoints_by_thread"}),
    "page before, every namespace": ("thread_checkpoints",
                                     {"PRIMARY KEY", "thread_checkpoints_by_thread"}),
    "page, small thread": ("thread_checkpoints", "PRIMARY KEY"),
    "run of one checkpoint": ("thread_checkpoints", "thread_checkpoints_by_run"),
    "runs to remove": ("thread_checkpoints", "thread_checkpoints_by_run"),
    "session latest": ("checkpoint_sessions", "PRIMARY KEY"),
    "session record by id": ("checkpoints", "checkpoints_by_checkpoint_id"),
    "session records": ("checkpoints", "PRIMARY KEY"),
    "run records": ("checkpoints", "checkpoints_by_run"),
}
"""Each view read on SQLite: its table and the index its plan must search (a table
``WITHOUT ROWID`` is searched by its ``PRIMARY KEY``)."""


async def _captured_sqlite(log: EventLog, reads: dict[str, Callable[[], Awaitable[object]]]
                           ) -> list[tuple[str, str, list[Any]]]:
    storage: Any = log.reader
    place = storage.view_sql
    seen: list[tuple[str, str, list[Any]]] = []
    name = ""

    def spy(query: Any) -> tuple[str, list[Any]]:
        sql, params = place(query)
        seen.append((name, sql, params))
        return sql, params

    storage.view_sql = spy
    try:
        for name, read in reads.items():  # spy reads the current name
            if name in SQLITE_EXPECTED:
                await read()
    finally:
        del storage.view_sql
    return seen


def _sqlite_problems(database: sqlite3.Connection,
                     captured: list[tuple[str, str, list[Any]]]) -> list[str]:
    problems = []
    for read, sql, params in captured:
        steps = [row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {sql}",
                                                     tuple(map(encode_value, params)))]
        found = re.search(r'"(\w+)" AS v\b', sql)
        assert found is not None, sql
        table, index = SQLITE_EXPECTED[read]
        if found.group(1) != table:  # a read's channel values or writes: by their key
            table, index = found.group(1), "PRIMARY KEY"
        wanted = index if isinstance(index, set) else {index}
        own = [step for step in steps if step.startswith(("SEARCH v ", "SCAN v"))]
        # Each index sought by some step, and each step seeking one of them.
        if not own or not all(step.startswith("SEARCH") and any(name in step for name in wanted)
                              for step in own) or not all(
                any(name in step for step in own) for name in wanted):
            problems.append(f"{read} ({table}): {steps}")
        # A merged read's halves (``SCAN h0``: the rows one half found, at most its
        # limit) are sorted for the merge; no sort may come before a half's limit.
        merged = {n for n, step in enumerate(steps) if "TEMP B-TREE FOR ORDER BY" in step
                  and n > 1 and steps[n - 1].startswith("SEARCH b ")
                  and steps[n - 2].startswith("SCAN h")} if isinstance(index, set) else set()
        problems += [f"{read} ({table}): {step}" for n, step in enumerate(steps)
                     if "TEMP B-TREE" in step and n not in merged]
    return problems


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_sqlite_hot_reads_take_their_index(tmp_path: Path, shape: str) -> None:
    """Every view read searches the index named for it: with no statistics, after
    ``ANALYZE`` (sqlite_stat1 written), and after ``PRAGMA optimize``."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        digests, record = await _filled(log, SHAPES[shape])
        captured = await _captured_sqlite(log, _reads(log, SHAPES[shape], digests, record))
    assert {read for read, _, _ in captured} == set(SQLITE_EXPECTED)
    problems = []
    database = sqlite3.connect(path)
    try:
        problems += [f"no statistics: {p}" for p in _sqlite_problems(database, captured)]
        database.execute("PRAGMA optimize")
        problems += [f"optimize: {p}" for p in _sqlite_problems(database, captured)]
        database.execute("ANALYZE")
        assert database.execute("SELECT count(*) FROM sqlite_stat1").fetchone()[0] > 0
        problems += [f"analyzed: {p}" for p in _sqlite_problems(database, captured)]
    finally:
        database.close()
    assert not problems, "\n".join(problems)


_OLD_INDEXES = [
    "DROP INDEX IF EXISTS {schema}thread_checkpoints_by_id",  # none since 0029
    "DROP INDEX {schema}thread_checkpoints_by_run",
    "CREATE INDEX thread_checkpoints_by_id ON {table} (tenant_id, checkpoint_id)",
    "CREATE INDEX thread_checkpoints_by_run ON {table} (tenant_id, run_key)",
    "UPDATE {schema}alembic_version SET version_num = '0023_consumer_seal'",
]
"""A log as the revision before 0024 left it: the two indexes led by the tenant."""


async def _upgraded_reads(url: str, **options: Any) -> list[object]:
    async with open_log(url, **options) as log:
        threads = log.checkpoints.threads
        return [await threads.get(T, "small-001"), await threads.find(T, "2001005"),
                [item.checkpoint_id for item in await threads.page(T, limit=5)]]


async def test_postgres_upgrade_reshapes_the_indexes(pg_schema: str) -> None:
    """A log at the revision before 0024 upgrades in place: the run index is led by the
    run afterwards and partial (0031), the index by id is gone (0029), and the reads find
    what they found before."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _fill(log, "small-001", [f"2001{step:03}" for step in range(10)])
    before = await _upgraded_reads(PG_URL, schema=pg_schema)
    connection = await asyncpg.connect(PG_URL)
    try:
        for statement in _OLD_INDEXES:
            await connection.execute(statement.format(
                schema=f'"{pg_schema}".', table=f'"{pg_schema}".thread_checkpoints'))
        assert await _upgraded_reads(PG_URL, schema=pg_schema) == before
        definitions = {row["indexname"]: row["indexdef"] for row in await connection.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 "
            "AND indexname IN ('thread_checkpoints_by_id', 'thread_checkpoints_by_run')",
            pg_schema)}
        version = await connection.fetchval(
            f'SELECT version_num FROM "{pg_schema}".alembic_version')
    finally:
        await connection.close()
    assert version == head_revision()
    assert ["thread_checkpoints_by_run"] == list(definitions)
    # Led by the run (0024), holding only the rows with a run key (0031).
    assert definitions["thread_checkpoints_by_run"].endswith(
        "(run_key, tenant_id) WHERE (run_key IS NOT NULL)")


async def test_sqlite_upgrade_reshapes_the_indexes(tmp_path: Path) -> None:
    """The same upgrade of a SQLite file."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url) as log:
        await _fill(log, "small-001", [f"2001{step:03}" for step in range(10)])
    before = await _upgraded_reads(url)
    with sqlite3.connect(tmp_path / "log.db") as database:
        for statement in _OLD_INDEXES:
            database.execute(statement.format(schema="", table="thread_checkpoints"))
    assert await _upgraded_reads(url) == before
    database = sqlite3.connect(tmp_path / "log.db")
    try:
        columns = {name: [row[2] for row in database.execute(f"PRAGMA index_info({name})")]
                   for name in ("thread_checkpoints_by_id", "thread_checkpoints_by_run")}
        version = database.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    finally:
        database.close()
    assert version == head_revision()
    assert columns == {"thread_checkpoints_by_id": [],  # gone (0029)
                       "thread_checkpoints_by_run": ["run_key", "tenant_id"]}


def test_citus_keeps_the_tenant_an_equality() -> None:
    """On Citus a read's tenant stays ``tenant_id = $n`` (what routes it to one worker)
    while the rest of the ordered equalities become ranges, as on PostgreSQL."""
    from eventlog.storage.citus import CitusDialect
    from eventlog.storage.sqltext import Numbered, PostgresDialect, query_sql

    query = ViewQuery("thread_checkpoints", {"tenant_id": T, "thread_id": "big"},
                      order_by=("tenant_id", "thread_id", "checkpoint_id"), descending=True)
    tables = {"thread_checkpoints": "thread_checkpoints"}
    citus = query_sql(query, tables, CitusDialect(), Numbered())
    plain = query_sql(query, tables, PostgresDialect(), Numbered())
    assert 'v."tenant_id" = $1' in citus
    assert 'v."thread_id" >= $2 AND v."thread_id" <= $2' in citus
    assert 'v."tenant_id" >= $1 AND v."tenant_id" <= $1' in plain
