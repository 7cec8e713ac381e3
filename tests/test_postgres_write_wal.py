"""What an append writes to PostgreSQL's WAL, record by record (issue 25, bytes per write).

The WAL is cluster-wide, and other tests write to the same server at the same time, so
each test reads the records of a range with ``pg_walinspect`` and keeps only those whose
first block belongs to one of its own schema's relations.
"""

from __future__ import annotations

import random
import re
import uuid
from collections import Counter
from typing import Any

import asyncpg
import msgspec

from eventlog import CheckpointRecord, open_log
from eventlog.checkpoints import Payload
from tests.conftest import PG_URL

_RELATION = re.compile(r"rel \d+/\d+/(\d+)")


async def _records(connection: asyncpg.Connection, schema: str, start: str
                   ) -> Counter[tuple[str, str]]:
    """(relation, record type) of each WAL record since ``start`` on ``schema``'s relations."""
    end = await connection.fetchval("SELECT pg_current_wal_flush_lsn()::text")
    names = {int(row[0]): str(row[1]) for row in await connection.fetch(
        "SELECT pg_relation_filenode(c.oid), c.relname FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 "
        "AND pg_relation_filenode(c.oid) IS NOT NULL", schema)}
    found: Counter[tuple[str, str]] = Counter()
    for row in await connection.fetch(
            "SELECT resource_manager, record_type, block_ref FROM "
            "pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn)", start, end):
        match = _RELATION.search(row["block_ref"] or "")
        if match and int(match.group(1)) in names:
            found[(names[int(match.group(1))], f"{row[0]}/{row[1]}")] += 1
    return found


async def _create(log: Any, step: int) -> None:
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.UUID(int=7), step=step,
        state={"step": step}))


async def test_a_later_create_upserts_its_head_rows_in_place(pg_schema: str) -> None:
    """The stream head and the session's latest row exist after the first create: the
    next create's INSERT … ON CONFLICT DO UPDATE updates each in place (a HOT update), after
    the Heap/LOCK such an upsert logs first (53 bytes). A plain UPDATE before the insert
    logged no lock, but its lookup was a planned one, which a generic plan cached while
    the table was small turned into a scan of the whole table at every append
    (`tests/test_postgres_write_scans.py`); the conflict arbiter is never planned."""
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        async with open_log(PG_URL, schema=pg_schema) as log:
            await _create(log, 0)
            start = await connection.fetchval("SELECT pg_current_wal_insert_lsn()::text")
            for step in range(1, 4):
                await _create(log, step)
            records = await _records(connection, pg_schema, start)
            assert (await log.checkpoints.latest("t", "s")).step == 3  # type: ignore[union-attr]
    finally:
        await connection.close()
    for table in ("stream_heads", "checkpoint_sessions"):
        kinds = Counter({kind: count for (relation, kind), count in records.items()
                         if relation == table})
        assert (3, 3, 0) == (kinds["Heap/HOT_UPDATE"], kinds["Heap/LOCK"],
                             kinds["Heap/INSERT"]), (table, records)
    assert records[("events", "Heap/INSERT")] + records[("events", "Heap/INSERT+INIT")] == 3


async def test_the_first_create_of_a_session_inserts_its_head_rows(pg_schema: str) -> None:
    """No row to update: the INSERT of the same statement adds it (and a second log's
    create of the same new session, racing, still ends with one row: ON CONFLICT)."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        await _create(log, 0)
        connection = await asyncpg.connect(PG_URL)
        try:
            rows = await connection.fetch(
                f'SELECT version FROM "{pg_schema}".stream_heads')
            sessions = await connection.fetch(
                f'SELECT latest_step FROM "{pg_schema}".checkpoint_sessions')
        finally:
            await connection.close()
    assert [row[0] for row in rows] == [1]
    assert [row[0] for row in sessions] == [0]


async def test_rows_updated_in_place_have_room_for_hot_updates(pg_schema: str) -> None:
    """The stream heads and sessions' latest rows, which appends update in place, sit on
    pages filled to 70 % (migration 0008), so an update finds room on its own page."""
    async with open_log(PG_URL, schema=pg_schema):
        connection = await asyncpg.connect(PG_URL)
        try:
            options = {row[0]: row[1] for row in await connection.fetch(
                "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
                pg_schema)}
        finally:
            await connection.close()
    assert options["stream_heads"] == ["fillfactor=70"]
    assert options["checkpoint_sessions"] == ["fillfactor=70"]
    assert not any(option.startswith("fillfactor") for option in options["events"] or [])


async def test_blob_payloads_live_out_of_line_so_a_reference_update_copies_a_small_row(
        pg_schema: str) -> None:
    """A blob's row is updated at each reference added or dropped (``refs``): its payload
    past ~100 bytes lives in the TOAST table (migration 0018), which such an update does
    not rewrite. Twenty 3 KB payloads of words (which pglz halves: at the default target
    each stayed inline, compressed, and each update copied it), each referenced twice,
    leave the blobs' own pages at most two."""
    rng = random.Random(33)
    words = [bytes(rng.choices(b"abcdefghij", k=rng.randint(2, 8))) for _ in range(300)]
    payloads = [b" ".join(rng.choices(words, k=600))[:3000] for _ in range(20)]
    async with open_log(PG_URL, schema=pg_schema) as log:
        for n in range(40):
            await log.checkpoints.threads.put("t", "chat", f"c{n:03}",
                                              state=Payload("b", payloads[n % 20]))
        connection = await asyncpg.connect(PG_URL)
        try:
            options = await connection.fetchval(
                "SELECT c.reloptions FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'blobs'",
                pg_schema)
            await connection.execute(f'VACUUM "{pg_schema}".blobs')
            main = await connection.fetchval(
                "SELECT pg_relation_size(format('%I.blobs', $1::text)::regclass)", pg_schema)
        finally:
            await connection.close()
    assert options == ["toast_tuple_target=128"]
    assert main <= 2 * 8192


async def test_a_create_inserts_its_checkpoint_row_without_a_speculative_insert(
        pg_schema: str) -> None:
    """A create's `checkpoints` row is keyed by its event's version, so the one-statement
    append writes it as a plain INSERT: one Heap/INSERT and no Heap/HEAP_CONFIRM (the second
    WAL record of an INSERT … ON CONFLICT) for the table, per create (issue 30 §4)."""
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        async with open_log(PG_URL, schema=pg_schema) as log:
            await _create(log, 0)
            start = await connection.fetchval("SELECT pg_current_wal_insert_lsn()::text")
            for step in range(1, 4):
                await _create(log, step)
            records = await _records(connection, pg_schema, start)
            assert 4 == len(await log.checkpoints.list("t", "s"))
    finally:
        await connection.close()
    kinds = Counter({kind: count for (relation, kind), count in records.items()
                     if relation == "checkpoints"})
    assert 0 == kinds["Heap/HEAP_CONFIRM"], records
    assert 3 == kinds["Heap/INSERT"] + kinds["Heap/INSERT+INIT"], records


def _state(text: str) -> Payload:
    return Payload("json", msgspec.json.encode([text, "x" * 40]))


async def test_a_put_and_its_writes_insert_thread_rows_without_speculative_inserts(
        pg_schema: str) -> None:
    """A thread put's checkpoint and channel-value rows and a task's write rows are new as
    a rule: the one-statement append inserts them plainly (`NEW_AS_A_RULE`), so no
    Heap/HEAP_CONFIRM (48 bytes a row) is logged for those tables; a row already there
    (the same writes again, a checkpoint put again) makes the append write the statement
    again with its conflict clauses, and what the rows say is what those clauses decide:
    the first write of an index wins, a special index's last write, a checkpoint's last
    put."""
    tables = {"thread_checkpoints", "thread_channel_values", "thread_writes"}
    connection = await asyncpg.connect(PG_URL)
    seen: list[bool] = []
    try:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        async with open_log(PG_URL, schema=pg_schema) as log:
            threads = log.checkpoints.threads
            backend: Any = log.storage
            single = backend.single_statement

            def spied(request: Any, *, plain: bool = False) -> Any:
                seen.append(plain)
                return single(request, plain=plain)

            backend.single_statement = spied
            start = await connection.fetchval("SELECT pg_current_wal_insert_lsn()::text")
            for step in range(4):
                await threads.put("t", "th", f"c{step}", state=_state(f"s{step}"),
                                  channels={"a": _state(f"a{step}"), "b": _state(f"b{step}")})
                await threads.put_writes("t", "th", f"c{step}", "task",
                                         [(0, "a", _state(f"w{step}")),
                                          (-1, "__error__", _state(f"e{step}"))])
            records = await _records(connection, pg_schema, start)
            assert [True] * 8 == seen
            # Again: each row is there, so each append is written twice.
            await threads.put_writes("t", "th", "c3", "task",
                                     [(0, "a", _state("late")), (-1, "__error__", _state("e9"))])
            await threads.put("t", "th", "c3", state=_state("again"),
                              channels={"a": _state("a3"), "b": _state("b3")})
            assert [True] * 8 + [True, False, True, False] == seen
            found = await threads.get("t", "th", "c3")
    finally:
        await connection.close()
    kinds = Counter(kind for (relation, kind), count in records.items()
                    for _ in range(count) if relation in tables)
    assert 0 == kinds["Heap/HEAP_CONFIRM"], records
    assert kinds["Heap/INSERT"] + kinds["Heap/INSERT+INIT"] >= 4 * (1 + 2 + 2), records
    assert found is not None
    assert found.state == _state("again")
    assert {w.idx: w.value for w in found.writes or []} == {0: _state("w3"), -1: _state("e9")}
