"""`SpilledViews`: a rebuild folded into a temporary SQLite file holds the rows an
in-memory rebuild holds (and the stored views), answers queries alike, refuses what it
cannot answer, and keeps its memory flat however large the log."""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import CheckpointRecord, EventLog, InvalidInput, SpilledViews, open_log
from eventlog.checkpoints import ChannelValue, Payload
from projections import rebuild
from projections.changes import Change, Delete
from projections.memory import ViewTables
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS
from tests.cli.helpers import seed
from tests.conftest import BackendTarget
from tests.properties.test_view_sql import TENANT, changes, queries

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
            expected, found = reference.select(query), spilled.select(query)
            if not query.order_by:
                expected.sort(key=lambda row: row["checkpoint_id"])
                found.sort(key=lambda row: row["checkpoint_id"])
            if query.limit is not None and not query.order_by:
                assert len(expected) == len(found), query
                continue
            assert expected == found, query
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


async def test_a_spilled_rebuild_keeps_its_memory_flat() -> None:
    """Four times the log, at most 1.5 times the peak (an in-memory rebuild grows with
    every row it holds)."""
    small, large = await _rebuild_peak(40), await _rebuild_peak(160)
    assert large < 1.5 * small, (small, large)
