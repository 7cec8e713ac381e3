"""The console's newest-first list (`eventlog.cli.serve.find`), on SQLite, PostgreSQL and
PgBouncer: a stream is listed once, at its last event, however the pages fall; a stream
written between two pages moves to the top and is not listed again below; another
tenant's streams never appear; a page reads the newest events, not every stream."""

from __future__ import annotations

import uuid

import pytest

from eventlog import CheckpointRecord, EventLog
from eventlog.cli.serve import find as finding
from eventlog.cli.serve.find import Filters, find
from tests.conftest import PGBOUNCER, BackendTarget

every_sql_backend = pytest.mark.parametrize("target", ["sqlite", "postgresql", PGBOUNCER],
                                            indirect=True)
RUN = uuid.UUID("00000000-0000-4000-8000-0000000000aa")


async def _write(log: EventLog, tenant: str, session: str, steps: int = 1) -> None:
    for step in range(steps):
        await log.checkpoints.create(CheckpointRecord(
            tenant_id=tenant, session_id=session, run_id=RUN, step=step, state={"n": step}))


async def _pages(log: EventLog, tenant: str) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    for _ in range(20):
        found = await find(log, tenant, Filters(), cursor)
        pages.append([item.ident for item in found.items])
        if found.cursor is None:
            return pages
        cursor = found.cursor
    raise AssertionError(f"more pages than streams: {pages}")


@every_sql_backend
async def test_each_stream_once_at_its_last_event_newest_first(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two a page: the pages list every session once, by its last write, newest first,
    and none of the other tenant's."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 2)
    async with target.open() as log:
        for name in ("s1", "s2", "s3", "s4", "s5"):
            await _write(log, "t", name, steps=3)
            await _write(log, "other", f"x-{name}")
        await _write(log, "t", "s2")  # s2 is now the newest
        pages = await _pages(log, "t")
    assert [["s2", "s5"], ["s4", "s3"], ["s1"]] == pages


@every_sql_backend
async def test_a_stream_written_between_pages_moves_to_the_top_only(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session written after the first page was read is not listed again on a later
    page; a new first page lists it first."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 2)
    async with target.open() as log:
        for name in ("s1", "s2", "s3", "s4"):
            await _write(log, "t", name, steps=2)
        first = await find(log, "t", Filters(), None)
        await _write(log, "t", "s1")  # below the cursor until now
        rest = await find(log, "t", Filters(), first.cursor)
        again = await find(log, "t", Filters(), None)
    assert (["s4", "s3"], ["s2"], ["s1", "s4"]) == (
        [i.ident for i in first.items], [i.ident for i in rest.items],
        [i.ident for i in again.items])


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_the_first_page_reads_the_newest_events_not_every_stream(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 300 sessions written before the newest 10, a page of 10 reads the newest
    events only (a few chunks), never a row per stream of the tenant."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 10)
    async with target.open() as log:
        for n in range(310):
            await _write(log, "t", f"s{n:03}")
        asked: list[int] = []
        newest = log.events_newest_first

        async def counted(tenant: str, before: int | None = None, limit: int = 500
                          ) -> list[tuple[str, int, int]]:
            rows = await newest(tenant, before, limit)
            asked.append(len(rows))
            return rows

        monkeypatch.setattr(log, "events_newest_first", counted)
        found = await find(log, "t", Filters(), None)
    assert [f"s{n:03}" for n in range(309, 299, -1)] == [i.ident for i in found.items]
    assert 0 < sum(asked) <= 4 * 10, asked


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_unresolved_lists_the_batches_whose_effect_has_no_outcome(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """``unresolved``: a batch whose effect is running and one whose claim ran out after
    its effect began (awaiting reconciliation), newest first, paged; not the pending
    batch nor the finished one. ``pending`` lists the pending one alone."""
    from eventlog.interrupts import Finish, Resume, ResumeInput
    from eventlog.interrupts.models import Interrupt
    from eventlog.testing.interrupts import APPROVAL, OPTIONS, PAY, FakeClock

    monkeypatch.setattr(finding, "PAGE_SIZE", 1)
    clock = FakeClock()
    asked = [Interrupt(id="a", reason="confirmation", response_schema=APPROVAL)]
    async with target.open(operations=[PAY], interrupt_options=OPTIONS, clock=clock) as log:
        batches = {}
        for thread in ("stuck", "running", "done", "pending"):  # stuck: before the clock moves
            batch = await log.interrupts.create("t", thread, asked, "c1", operation=PAY)
            batches[thread] = batch.batch_id
            if thread == "pending":
                continue
            claim = (await log.interrupts.try_claim("t", ResumeInput(
                thread_id=thread, batch_id=batch.batch_id, responses=[Resume(
                    interrupt_id="a", status="resolved", payload={"approved": True})]))).claim
            assert claim is not None
            assert await log.interrupts.try_start_effect(claim)
            if thread == "done":
                await log.interrupts.finish(claim, Finish.FINALIZE)
            if thread == "stuck":  # its worker died: the lease runs out
                clock.advance(hours=2)
                await log.interrupts.cleanup()
        pages, cursor = [], None
        for _ in range(5):
            found = await find(log, "t", Filters(state="unresolved"), cursor)
            pages.append([(item.thread, item.state) for item in found.items])
            if found.cursor is None:
                break
            cursor = found.cursor
        pending = await find(log, "t", Filters(state="pending"), None)
    assert [[("running", "effect_started")], [("stuck", "unresolved")], []] == pages[:3]
    assert [batches["pending"]] == [item.ident for item in pending.items]


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_question_finds_a_workflow_waiting_for_an_answer(target: BackendTarget) -> None:
    """An Agent Framework workflow paused on a request for information is found by the
    ``question`` filter; one answered and finished is not; both are Agent Framework's."""
    from agent_framework import WorkflowBuilder

    from eventlog.adapters.maf import EventlogCheckpointStorage
    from tests.forensic_threads import Ask, Plan, maf_workflow

    async with target.open() as log:
        await maf_workflow(log, "t", "answered")
        storage = EventlogCheckpointStorage(log, tenant_id="t")
        plan, ask = Plan(id="plan"), Ask(id="ask")
        paused = await WorkflowBuilder(name="waiting", start_executor=plan,
                                       checkpoint_storage=storage).add_edge(plan, ask).build(
                                       ).run("order")
        assert paused.get_request_info_events()
        asking = await find(log, "t", Filters(state="question"), None)
        theirs = await find(log, "t", Filters(framework="agent-framework"), None)
    assert ["waiting"] == [item.ident for item in asking.items]
    assert ["waiting", "answered"] == [item.ident for item in theirs.items]
