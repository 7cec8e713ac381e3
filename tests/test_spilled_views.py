"""`SpilledViews`: a rebuild folded into a temporary SQLite file holds the rows an
in-memory rebuild holds (and the stored views), answers queries alike, refuses what it
cannot answer, and keeps its memory flat however large the log."""

from __future__ import annotations

import sqlite3
import tracemalloc
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import CheckpointRecord, EventLog, InvalidInput, SpilledViews, open_log
from eventlog.checkpoints import ChannelValue, Payload
from projections import compare_views, rebuild, rebuilding
from projections.changes import Change, Delete
from projections.memory import ViewTables
from projections.query import Lookup, ViewQuery
from projections.threads import THREAD_CHECKPOINTS
from tests.cli.helpers import seed
from tests.conftest import BackendTarget
from tests.peaks import dictionary_yardstick, in_child
from tests.properties.test_view_sql import TENANT, assert_same_answer, changes, queries

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


async def _threads(log: EventLog) -> None:
    """Thread puts, writes, a prune and a delete: every thread view gets rows and loses some."""
    threads = log.checkpoints.threads
    for thread in ("kept", "gone"):
        for step in range(4):
            await threads.put(
                "t", thread, f"c{step}", state=Payload("json", b'{"s": %d}' % step),
                channels={"messages": ChannelValue(f"v{step}", Payload("json", b"[%d]" % step)),
                          "fixed": ChannelValue("v0", Payload("json", b"1") if not step else None)},
                parent_id=f"c{step - 1}" if step else None, run_key=f"r{step % 2}", step=step,
                metadata={"step": step},
            )
            await threads.put_writes("t", thread, f"c{step}", "task", [(0, "out", Payload(
                "json", b"%d" % step))])
    await threads.prune("t", "kept", keep_latest=2)
    await threads.delete_thread("t", "gone")


async def test_a_spilled_rebuild_holds_the_rows_of_a_memory_rebuild_and_the_stored_views(
    tmp_path: Path,
) -> None:
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path}/log.db")
    await seed(target)  # sessions, runs, a replayed step, interrupts claimed and finished
    async with target.open() as log:
        await _threads(log)
        in_memory = (await rebuild(log)).snapshot()
        with SpilledViews(commit_every=7) as spilled:
            assert spilled is await rebuild(log, into=spilled)
            assert in_memory == spilled.snapshot()
        assert in_memory == await log.dump_views()
        assert all(in_memory[name] for name in (THREAD_CHECKPOINTS, "checkpoints",
                                                "interrupt_batches", "thread_writes"))


async def test_a_spilled_rebuild_stops_where_it_is_told() -> None:
    async with open_log("memory://") as log:
        positions = [
            (await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=RUN, state={"n": n}))).position
            for n in range(5)
        ]
        assert positions[2] is not None
        past = (await rebuild(log, until_position=positions[2])).snapshot()
        with SpilledViews() as spilled:
            await rebuild(log, until_position=positions[2], into=spilled)
            assert past == spilled.snapshot()
            assert 3 == len(spilled.select(ViewQuery("checkpoints", {"tenant_id": "t"})))


@settings(max_examples=60)
@given(applied=st.lists(changes, max_size=8), asked=st.lists(queries(), min_size=1, max_size=4))
def test_spilled_views_answer_as_the_memory_views_do(
    applied: list[Change], asked: list[ViewQuery]
) -> None:
    """Any changes, then any query: the same rows as `ViewTables`."""
    reference = ViewTables()
    numbered = [(change, position) for position, change in enumerate(applied, start=1)]
    reference.apply_all(numbered)
    with SpilledViews(commit_every=3) as spilled:
        spilled.apply_all([(Delete(THREAD_CHECKPOINTS, {"tenant_id": TENANT}), 0), *numbered])
        for query in asked:
            if query.with_blob is not None:
                with pytest.raises(InvalidInput, match="with_blob"):
                    spilled.select(query)
                continue
            assert_same_answer(query, reference.select(query), spilled.select(query))
        assert reference.snapshot() == spilled.snapshot()


def test_an_unknown_view_is_refused_by_name() -> None:
    with SpilledViews() as spilled, pytest.raises(InvalidInput, match="'nope'"):
        spilled.select(ViewQuery("nope"))


async def _rebuild_peak(sessions: int) -> int:
    """Peak bytes Python allocates while rebuilding, into a spilled store, a log of
    50 checkpoints in each of ``sessions`` sessions."""
    async with open_log("memory://") as log:
        for number in range(sessions * 50):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{number // 50}", run_id=RUN,
                state={"n": number}, metadata={"note": "x" * 200}))
        tracemalloc.start()
        try:
            with SpilledViews(cache_kib=1_024) as spilled:
                await rebuild(log, into=spilled)
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak


async def rebuild_peaks() -> dict[str, int]:
    """The rebuild's peaks at 2,000 and 8,000 checkpoints after a warm-up rebuild, and the
    yardstick: a dictionary entry for each of the 6,000 extra checkpoints."""
    await _rebuild_peak(10)
    return {"small": await _rebuild_peak(40), "large": await _rebuild_peak(160),
            "yardstick": dictionary_yardstick(6_000)}


@pytest.mark.growth
def test_a_spilled_rebuild_keeps_its_memory_flat() -> None:
    """Four times the log add less than half of what one dictionary entry per extra
    checkpoint holds (an in-memory rebuild holds every row), measured in a child process
    of its own (tests/peaks.py says why)."""
    peaks = in_child("tests.test_spilled_views:rebuild_peaks")
    assert peaks["large"] - peaks["small"] < peaks["yardstick"] / 2, peaks


async def test_compare_views_spilled_finds_what_the_memory_compare_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed row, a missing row and a row the log never made: both compares name the
    same differences, also when every table spans several pages."""
    monkeypatch.setattr(rebuilding, "COMPARE_PAGE", 2)
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path}/log.db")
    story = await seed(target)
    async with target.open() as log:
        await _threads(log)
        assert [] == await compare_views(log, spill=SpilledViews)
    with sqlite3.connect(tmp_path / "log.db") as connection:
        connection.execute("UPDATE checkpoint_sessions SET latest_step = 99 "
                           "WHERE tenant_id = ?", (story.tenant,))
        connection.execute("DELETE FROM thread_writes WHERE thread_id = 'kept' AND "
                           "checkpoint_id = 'c3'")
        connection.execute("INSERT INTO stream_heads (tenant_id, stream_id, version, "
                           "head_hash, last_position, updated_at) SELECT tenant_id, "
                           "'forged', version, head_hash, last_position, updated_at "
                           "FROM stream_heads LIMIT 1")
    async with target.open() as log:
        in_memory = await compare_views(log)
        spilled = await compare_views(log, spill=SpilledViews)
    assert {"checkpoint_sessions", "thread_writes", "stream_heads"} == {
        difference.table for difference in in_memory}
    assert sorted(in_memory, key=repr) == sorted(spilled, key=repr)
    forged = [d for d in spilled if d.table == "stream_heads"]
    assert [(None, "forged")] == [(d.rebuilt, d.stored and d.stored["stream_id"])
                                  for d in forged]


def test_a_uuid_subclass_binds_as_a_uuid() -> None:
    """asyncpg reads uuid columns as its own UUID subclass: rows copied from PostgreSQL
    into a spilled store bind them as SQLAlchemy binds a UUID."""
    from asyncpg.pgproto.pgproto import UUID as AsyncpgUUID

    from eventlog.storage.sqlite import encode_value

    plain = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert encode_value(plain) == encode_value(AsyncpgUUID(str(plain))) == plain.hex


def test_a_lookup_of_no_keys_reads_nothing() -> None:
    """A `Lookup` naming no key answers no rows, from spilled views as from memory."""
    query = ViewQuery(THREAD_CHECKPOINTS, {"tenant_id": "t"}, lookup=Lookup(("thread_id",), ()))
    with SpilledViews() as spilled:
        assert [] == spilled.select(query) == ViewTables().select(query)
