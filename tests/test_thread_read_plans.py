"""Every thread read seeks its thread's rows by key, on PostgreSQL and SQLite (issue 25).

A thread of LangGraph's shape (every channel changed at every step, LangGraph's version
strings, two writes per checkpoint, a second namespace) sits beside other threads of the
same tenant whose checkpoint ids are all newer. Each read `ThreadCheckpoints` makes for
``get`` (latest and by id) and ``page`` (one namespace, every namespace, a keyset page,
a long page) is captured as the backend runs it and explained: on PostgreSQL with
``EXPLAIN ANALYZE`` under both a custom and a generic plan (asyncpg prepares every
statement, so after five runs PostgreSQL may plan it once for any parameters), on SQLite
with ``EXPLAIN QUERY PLAN`` (a thread fixed as a closed range is fixed: issue 41,
`eventlog.storage.sqltext.SqlDialect.ranges_ordered_keys`). A plan that scans a thread
table, or whose scan of it drops rows by filter (the tenant's other threads walked
through, or the thread's every channel value filtered for one checkpoint's), fails. On
PostgreSQL each read is one statement (its channel values and writes read with the
checkpoints: `projections.query.Related`), and returns what the memory backend's reads
(by separate lookups) return.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from eventlog import EventLog, InvalidInput, open_log
from eventlog.checkpoints import thread_decisions as decide
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from eventlog.events import Event
from eventlog.events.threads import ThreadWritesPut
from eventlog.storage.sqlite import encode_value
from projections.query import Related, ViewQuery
from tests.conftest import PG_URL

T = "acme"
BIG = [f"1{step:05}" for step in range(150)]
"""The thread read: its ids sort below every other thread's."""
OTHERS = {f"other-{n}": [f"2{n}{step:04}" for step in range(40)] for n in range(4)}
THREAD_TABLES = ("thread_checkpoints", "thread_channel_values", "thread_writes")


async def _fill(log: EventLog, thread: str, ids: list[str], namespace: str = "",
                run_key: str | None = "run", tenant: str = T) -> None:
    """One append of ``ids`` as puts in ``thread``, each changing both channels, each
    with two writes: the rows a one-node chat graph leaves; ``run_key=None`` saves each
    under its own id as run key, as Agent Framework's adapter does."""
    events: list[Event] = []
    attach: list[bytes] = []
    parent = None
    # LangGraph's versions, their random tails the same in every log this fills (reads
    # compared across two logs give each checkpoint's versions back).
    chance = random.Random(f"{tenant}/{thread}/{namespace}")
    for step, checkpoint_id in enumerate(ids):
        channels = {
            name: ChannelValue(f"{step + 1:032}.{chance.random():016}",
                               Payload("json", f'["{name}", {step}, "{"x" * 200}"]'.encode()))
            for name in ("messages", "step")
        }
        put, blobs = decide.put_event(
            thread_id=thread, namespace=namespace, checkpoint_id=checkpoint_id,
            parent_id=parent, run_key=run_key or checkpoint_id, step=step,
            state=Payload("json", b"{}"),
            channels=channels, metadata={"step": step}, max_bytes=1 << 20,
        )
        plan = decide.plan_writes([(0, "messages", Payload("json", b'["hi"]')),
                                   (1, "step", Payload("json", str(step).encode()))])
        events += [put, ThreadWritesPut(thread_id=thread, namespace=namespace,
                                        checkpoint_id=checkpoint_id, task_id="task",
                                        task_path="", writes=plan.writes)]
        attach += [*blobs, *plan.attach]
        parent = checkpoint_id
    await log.append(tenant, decide.thread_stream(thread), events, attach=attach)


async def _filled(log: EventLog) -> None:
    await _fill(log, "big", BIG)
    await _fill(log, "big", [f"0{step:05}" for step in range(5)], namespace="child:1")
    for thread, ids in OTHERS.items():
        await _fill(log, thread, ids)


def _reads(log: EventLog) -> dict[str, Callable[[], Awaitable[object]]]:
    store = log.checkpoints.threads
    return {
        "latest": lambda: store.get(T, "big"),
        "by id": lambda: store.get(T, "big", BIG[75]),
        "page": lambda: store.page(T, "big", namespace="", limit=10),
        "page before": lambda: store.page(T, "big", namespace="", before=BIG[100], limit=10),
        "page, every namespace": lambda: store.page(T, "big", limit=10),
        "long page": lambda: store.page(T, "big", namespace="", limit=60),
    }


async def _captured(log: EventLog) -> list[tuple[str, str, list[Any]]]:
    """(read, SQL, parameters) of every view query the reads run."""
    storage: Any = log.reader
    place = storage.view_sql  # what every SQL backend runs each view query's text through
    seen: list[tuple[str, str, list[Any]]] = []
    name = ""

    def spy(query: Any) -> tuple[str, list[Any]]:
        sql, params = place(query)
        seen.append((name, sql, params))
        return sql, params

    storage.view_sql = spy
    try:
        for name, read in _reads(log).items():  # noqa: B007  # spy reads the current name
            await read()
    finally:
        del storage.view_sql
    assert {read for read, _, _ in seen} == set(_reads(log))
    return seen


def sql_literal(value: Any) -> str:
    """``value`` as a SQL literal, for a statement EXPLAIN runs with its parameters in."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return f"'\\x{value.hex()}'::bytea"
    if isinstance(value, uuid.UUID):
        return f"'{value}'::uuid"
    if isinstance(value, list):
        kind = "bytea" if value and isinstance(value[0], bytes) else "text"
        return "ARRAY[" + ", ".join(map(sql_literal, value)) + f"]::{kind}[]"
    assert isinstance(value, str)
    return "'" + value.replace("'", "''") + "'"


def _filtering(plan: dict[str, Any]) -> list[str]:
    """The plan's scans of a thread table that scan it or drop rows by filter."""
    found = []
    relation = plan.get("Relation Name", "")
    if relation in THREAD_TABLES:
        dropped = plan.get("Rows Removed by Filter", 0) + plan.get(
            "Rows Removed by Index Recheck", 0)
        if plan["Node Type"] == "Seq Scan" or dropped:
            found.append(f"{plan['Node Type']} on {relation} ({plan.get('Index Name')}): "
                         f"{dropped} rows removed by filter {plan.get('Filter')}")
    for child in plan.get("Plans", []):
        found += _filtering(child)
    return found


async def test_postgres_thread_reads_seek_their_rows(pg_schema: str) -> None:
    """Custom and generic plans of every thread read seek; none filters a thread table."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _filled(log)
        connection = await asyncpg.connect(PG_URL)
        try:
            for table in (*THREAD_TABLES, "blobs"):
                await connection.execute(f'ANALYZE "{pg_schema}"."{table}"')
            problems = []
            for number, (read, sql, params) in enumerate(await _captured(log)):
                await connection.execute(f"PREPARE q{number} AS {sql}")
                arguments = ", ".join(map(sql_literal, params))
                for mode in ("force_custom_plan", "force_generic_plan"):
                    await connection.execute(f"SET plan_cache_mode = {mode}")
                    explained = await connection.fetchval(
                        f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE q{number}({arguments})")
                    problems += [f"{read} ({mode}): {problem}"
                                 for problem in _filtering(json.loads(explained)[0]["Plan"])]
        finally:
            await connection.close()
    assert [] == problems


async def test_sqlite_thread_reads_seek_their_rows(tmp_path: Path) -> None:
    """Every thread read's query plan searches a thread table by its thread (or by the
    checkpoint's key), never scans one."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        await _filled(log)
        captured = await _captured(log)
    problems = []
    database = sqlite3.connect(path)
    try:
        for read, sql, params in captured:
            for row in database.execute(f"EXPLAIN QUERY PLAN {sql}",
                                        tuple(map(encode_value, params))):
                step = row[3]
                if step.startswith(("SCAN v", "SEARCH v")) and not re.search(
                        r"thread_id=\?|thread_id>\? AND thread_id<\?", step):
                    problems.append(f"{read}: {step}")
    finally:
        database.close()
    assert [] == problems


def _comparable(found: object) -> list[dict[str, Any] | None]:
    """A read's checkpoints without what differs between two logs of the same events."""
    items: list[Any] = found if isinstance(found, list) else [found]
    return [None if item is None else {
        name: getattr(item, name) for name in item.__struct_fields__
        if name not in ("position", "recorded_at")} for item in items]


async def test_postgres_thread_reads_are_one_statement(pg_schema: str) -> None:
    """Each checkpoint read (latest, by id, every page) runs one statement on PostgreSQL,
    and finds what the memory backend's separate lookups find: the state, every channel
    value the checkpoint names (its own and one an older checkpoint stored), every write."""
    async with open_log(PG_URL, schema=pg_schema) as log, open_log("memory://") as memory:
        for each in (log, memory):
            await _filled(each)
            rows = await each.query(ViewQuery(
                "thread_checkpoints", {"tenant_id": T, "thread_id": "big", "namespace": ""},
                order_by=("checkpoint_id",), descending=True, limit=1, columns=("channels",)))
            older = json.loads(rows[0]["channels"])["messages"]
            await each.checkpoints.threads.put(T, "big", "1zzzzz", state=Payload("json", b"{}"),
                                               channels={"messages": ChannelValue(older)})
        captured = await _captured(log)
        counts = {read: sum(1 for name, _, _ in captured if name == read)
                  for read in _reads(log)}
        assert counts == dict.fromkeys(_reads(log), 1)
        ours, theirs = _reads(log), _reads(memory)
        for read in ours:
            found, expected = _comparable(await ours[read]()), _comparable(await theirs[read]())
            assert found == expected, read
            assert all(item is not None and item["channels"] and item["state"]
                       for item in found), read
        latest = await log.checkpoints.threads.get(T, "big")
        assert latest is not None
        assert latest.checkpoint_id == "1zzzzz"
        assert latest.channels is not None
        assert set(latest.channels) == {"messages"}
        assert latest.writes == []
        by_id = await log.checkpoints.threads.get(T, "big", BIG[75])
        assert by_id is not None
        assert by_id.writes is not None
        assert len(by_id.writes) == 2
        assert by_id.channels is not None
        assert set(by_id.channels) == {"messages", "step"}


@pytest.mark.parametrize(("related", "problem"), [
    (Related("values", "no_such_table", on=("thread_id",), columns=("channel",)),
     "no view table"),
    (Related("values", "thread_channel_values", on=("thread_id",), columns=("nope",)),
     "columns names no column"),
    (Related("values", "thread_channel_values", on=("thread_id",), columns=("channel",),
             pairs=("channel", "channel_version")), "pairs with pairs_from"),
    (Related("values", "thread_channel_values", on=("namespace",), columns=("channel",)),
     "needs column 'namespace'"),
])
async def test_related_rows_bad_input(related: Related, problem: str) -> None:
    """A `Related` naming what its tables do not hold is refused, naming what is wrong."""
    async with open_log("memory://") as log:
        with pytest.raises(InvalidInput, match=problem):
            await log.query(ViewQuery("thread_checkpoints", {"tenant_id": T},
                                      columns=("thread_id",), related=(related,)))
        with pytest.raises(InvalidInput, match="names its tenant_id"):
            await log.query(ViewQuery("thread_checkpoints", {}, related=(Related(
                "values", "thread_channel_values", on=("thread_id",), columns=("channel",)),)))
