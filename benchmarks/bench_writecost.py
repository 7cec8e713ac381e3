"""What one write costs on PostgreSQL: WAL bytes and records, and client CPU (issue 25).

Measured on a PRIVATE throwaway cluster (`benchmarks.walcluster`; or the quiet server at
``EVENTLOG_BENCH_WAL_PG``): the WAL insert position is cluster-wide, so another client's
writes would land in our figures. Autovacuum is off there, and checkpoints come only when
asked. Contestants, each writing the shape a one-node chat graph writes (every step
changes ``messages``, ~2 KB of prose-like text, each thread's its own, and ``step``, with
LangGraph's version strings):

- ``create``: a session checkpoint (`CheckpointStore.create`) of the same ~2 KB state;
- ``raw_insert``: one asyncpg INSERT of those state bytes into a table of
  (identity id, tenant, session, state): what a row of the same state costs at least;
- ``aput`` / ``aput_writes``: the LangGraph adapter (`AsyncEventlogSaver`);
- ``langgraph_aput`` / ``langgraph_aput_writes``: LangGraph's own ``AsyncPostgresSaver``.

Per round and contestant: a ``CHECKPOINT``, then ``count`` calls (500, or
``BENCH_WRITECOST_CALLS``: more calls amortise the checkpoint's full-page images), the
WAL insert position read before and after. Figures per call: WAL bytes (everything, the
full-page images the checkpoint caused included), WAL bytes without full-page images,
and WAL records (from ``pg_walinspect``), and client CPU µs (`time.process_time` of this
process around the calls: ours, asyncpg's and psycopg's work and the kernel's on their
behalf, not the server's). The medians over the interleaved rounds; the last round's
bytes by relation are printed (the record's first block's relation; records with none
by resource manager), full-page images apart.
"""

from __future__ import annotations

import os
import random
import re
import string
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from benchmarks.bench_threads import chat_steps
from benchmarks.common import Results, rounds, section, size
from benchmarks.walcluster import scratch_database
from eventlog import CheckpointRecord, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver


def _text_messages() -> list[str]:
    """18 messages of ~100 characters of made-up words: compressible as prose is (zlib: to
    55 %), where the other benchmarks' ``"x" * 100`` shrinks to a few per cent."""
    chance = random.Random(25)
    words = ["".join(chance.choice(string.ascii_lowercase) for _ in range(chance.randint(2, 9)))
             for _ in range(400)]
    messages = []
    for _ in range(18):
        text = ""
        while len(text) < 100:
            text += chance.choice(words) + " "
        messages.append(text[:100])
    return messages


MESSAGES = _text_messages()
STATE = {"messages": MESSAGES, "step": 1}  # ~2 KB as JSON
THREAD = 100
"""Calls per thread (session): a new thread every this many calls."""
LISTED = 40
"""Lines of the by-relation breakdown printed per contestant."""
Operation = Callable[[int], Awaitable[object]]
RELATION = re.compile(r"rel (\d+)/(\d+)/(\d+)")
"""A WAL block reference's relation: tablespace, database and file node."""


class Wal:
    """Reads the WAL insert position and, where pg_walinspect can be created, its records."""

    def __init__(self, connection: asyncpg.Connection) -> None:
        self.connection = connection
        self.inspect = False

    async def setup(self) -> None:
        try:
            await self.connection.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            self.inspect = True
        except asyncpg.PostgresError as error:
            print(f"  (no pg_walinspect: {error}; bytes only, FPIs not told apart)")

    async def lsn(self) -> str:
        return str(await self.connection.fetchval("SELECT pg_current_wal_insert_lsn()::text"))

    async def relation_names(self) -> dict[int, str]:
        """Each relation of the database (``schema.name``) by its file node, the number
        a WAL record's block reference names it by."""
        return {int(row[0]): str(row[1]) for row in await self.connection.fetch(
            "SELECT pg_relation_filenode(c.oid), n.nspname || '.' || c.relname "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE pg_relation_filenode(c.oid) IS NOT NULL")}

    async def between(self, start: str, end: str) -> tuple[int, int, int, dict[str, int]]:
        """(bytes, bytes without full-page images, records, bytes by relation)."""
        total = int(await self.connection.fetchval(
            "SELECT $2::text::pg_lsn - $1::text::pg_lsn", start, end))
        if not self.inspect:
            return total, total, 0, {}
        # Flushed by then (each call commits synchronously), so every record is readable.
        rows = await self.connection.fetch(
            "SELECT resource_manager, record_type, record_length, fpi_length, block_ref "
            "FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn)", start, end)
        names = await self.relation_names()
        by_relation: dict[str, int] = {}
        for row in rows:
            found = RELATION.search(row["block_ref"] or "")
            where = (names.get(int(found.group(3)), f"filenode {found.group(3)}")
                     if found else f"({row['resource_manager']})")
            relation = where.split(".", 1)[-1]
            key = f"{relation} {row['resource_manager']}/{row['record_type']}"
            fpi = int(row["fpi_length"])
            by_relation[key] = by_relation.get(key, 0) + int(row["record_length"]) - fpi
            if fpi:
                key = f"{relation} full-page images"
                by_relation[key] = by_relation.get(key, 0) + fpi
        fpi = sum(int(row["fpi_length"]) for row in rows)
        return total, total - fpi, len(rows), by_relation


async def measure(wal: Wal, contestants: dict[str, Operation], count: int
                  ) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, int]]]:
    """Per figure and contestant, the per-call value of each interleaved round; and the
    last round's bytes by relation per contestant."""
    figures: dict[str, dict[str, list[float]]] = {
        figure: {name: [] for name in contestants}
        for figure in ("wal_bytes", "wal_bytes_no_fpi", "wal_records", "cpu_us")}
    breakdown: dict[str, dict[str, int]] = {}
    offset = 0
    for _ in range(rounds()):
        for name, operation in contestants.items():
            await wal.connection.execute("CHECKPOINT")
            start = await wal.lsn()
            cpu = time.process_time()
            for index in range(count):
                await operation(offset + index)
            cpu = time.process_time() - cpu
            end = await wal.lsn()
            total, no_fpi, records, breakdown[name] = await wal.between(start, end)
            figures["wal_bytes"][name].append(total / count)
            figures["wal_bytes_no_fpi"][name].append(no_fpi / count)
            figures["wal_records"][name].append(records / count)
            figures["cpu_us"][name].append(cpu / count * 1e6)
        offset += count
    return figures, breakdown


async def run(results: Results) -> None:
    count = int(os.environ.get("BENCH_WRITECOST_CALLS", "0")) or size(500, 20)
    section(f"write cost on PostgreSQL (WAL and client CPU): {count} calls per round")
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]')")
        return
    async with scratch_database("writecost") as (url, version):
        print(f"  measured on {url} (pg {version})")
        await _run(results, url, count, AsyncPostgresSaver)


async def _run(results: Results, url: str, count: int, saver_class: Any) -> None:
    probe = await asyncpg.connect(url)
    wal = Wal(probe)
    await wal.setup()
    await probe.execute('CREATE SCHEMA theirs')
    await probe.execute(
        "CREATE TABLE raw_checkpoints (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "tenant_id text NOT NULL, session_id text NOT NULL, state bytea NOT NULL)")
    raw = await asyncpg.connect(url)
    async with open_log(url, schema="ours") as log, AsyncEventlogSaver.from_conn_string(
        url, tenant_id="bench", schema="ours_adapter"
    ) as ours, saver_class.from_conn_string(
        url + "?options=-csearch_path%3Dtheirs"
    ) as theirs:
        await theirs.setup()
        run_id = uuid.uuid4()
        insert = "INSERT INTO raw_checkpoints (tenant_id, session_id, state) VALUES ($1, $2, $3)"
        async def raw_insert(i: int) -> None:
            state = {**STATE, "step": i}
            await raw.execute(insert, "t", f"s{i // THREAD}", _json(state))

        async def create(i: int) -> None:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{i // THREAD}", run_id=run_id, step=i,
                state={**STATE, "step": i}))

        contestants: dict[str, Operation] = {
            "raw_insert": raw_insert, "create": create,
            "aput": _putter(ours, "ours"), "langgraph_aput": _putter(theirs, "theirs"),
            "aput_writes": _writer(ours, "ours"),
            "langgraph_aput_writes": _writer(theirs, "theirs"),
        }
        for operation in contestants.values():  # the first calls prepare, connect
            for index in range(10**8, 10**8 + 20):
                await operation(index)
        figures, breakdown = await measure(wal, contestants, count)
    await raw.close()
    await probe.close()
    _report(results, figures, breakdown, count)


def _json(state: dict[str, Any]) -> bytes:
    import msgspec

    return msgspec.json.encode(state)


def _putter(saver: Any, prefix: str) -> Operation:
    """``aput`` of one chat step per call; a new thread every `THREAD` calls."""
    steps: dict[str, Any] = {}

    async def put(i: int) -> None:
        thread = f"{prefix}-{i // THREAD}"
        state = steps.get(thread)
        if state is None:
            steps.clear()
            state = steps[thread] = {"steps": chat_steps(saver, 10**9), "parent": None}
        checkpoint, metadata, new = next(state["steps"])
        values = checkpoint["channel_values"]  # each thread's messages its own
        values["messages"] = [*MESSAGES, f"{thread} {values['messages'][-1]}"]
        configurable = {"thread_id": thread, "checkpoint_ns": ""}
        if state["parent"] is not None:
            configurable["checkpoint_id"] = state["parent"]
        await saver.aput({"configurable": configurable}, checkpoint, metadata, new)
        state["parent"] = checkpoint["id"]
    return put


def _writer(saver: Any, prefix: str) -> Operation:
    """``aput_writes`` of one task's write (one ~100-byte message) per call."""
    async def write(i: int) -> None:
        config = {"configurable": {"thread_id": f"{prefix}-w{i // THREAD}",
                                   "checkpoint_ns": "",
                                   "checkpoint_id": f"1f0-{i // THREAD:08}"}}
        await saver.aput_writes(config, [("messages", [f"message {i} " + "x" * 90])],
                                str(uuid.UUID(int=i + 1)))
    return write


GOALS = {  # (ours, peer): goal on ours ÷ peer, at most
    ("create", "raw_insert"): 2.0,
    ("aput", "langgraph_aput"): 1.5,
    ("aput_writes", "langgraph_aput_writes"): None,
}


def _report(results: Results, figures: dict[str, dict[str, list[float]]],
            breakdown: dict[str, dict[str, int]], count: int) -> None:
    units = {"wal_bytes": "B/call", "wal_bytes_no_fpi": "B/call (no FPI)",
             "wal_records": "records/call"}
    for figure, unit in units.items():
        for (ours, peer), goal in GOALS.items():
            if figure == "wal_records" and not any(figures[figure][ours]):
                continue
            if figure == "wal_records":
                goal = None  # the goals are on bytes; records tell where they come from
            results.compare(f"WAL {unit}: {ours} vs {peer}", ours, peer, figures[figure],
                            unit=unit, goal="(info)" if goal is None else f"≤ {goal}",
                            at_most=goal)
    cpu = figures["cpu_us"]
    for ours, peer in (("create", "raw_insert"), ("aput", "langgraph_aput"),
                       ("aput_writes", "langgraph_aput_writes")):
        results.compare(f"client CPU µs/call: {ours} vs {peer}", ours, peer, cpu,
                        unit="µs/call", goal="(info)")
    for ours in ("create", "aput"):
        # The goal is absolute (≤ 150 µs): a ratio to 150 µs, met at ≤ 1.
        cpu.setdefault("goal_150us", [150.0] * len(cpu[ours]))
        results.compare(f"client CPU per {ours} vs 150 µs", ours, "goal_150us", cpu,
                        unit="µs/call", goal="≤ 1 (150 µs)", at_most=1.0)
    print("\n  WAL bytes per call by relation and record type (last round)")
    for name, relations in breakdown.items():
        total = sum(relations.values())
        print(f"    {name}: {total / count:.0f} B/call")
        for key, value in sorted(relations.items(), key=lambda item: -item[1])[:LISTED]:
            print(f"      {key:<64} {value / count:>8.0f}  {value / max(total, 1):6.1%}")
