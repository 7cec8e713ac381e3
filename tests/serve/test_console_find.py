"""The console's newest-first list (`eventlog.cli.serve.find`), on SQLite, PostgreSQL and
PgBouncer: a stream is listed once, at its last event, however the pages fall; a stream
written between two pages moves to the top and is not listed again below; another
tenant's streams never appear; a page reads the newest events, not every stream."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from eventlog import CheckpointRecord, EventLog
from eventlog.cli.serve import find as finding
from eventlog.cli.serve.find import Filters, find
from eventlog.testing.interrupts import OPTIONS, PAY, FakeClock
from tests.conftest import PGBOUNCER, BackendTarget

every_sql_backend = pytest.mark.parametrize("target", ["sqlite", "postgresql", PGBOUNCER],
                                            indirect=True)
RUN = uuid.UUID("00000000-0000-4000-8000-0000000000aa")
CLOCK = FakeClock()
"""The interrupt tests' clock (moved forward only: each test's log is new)."""


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


async def _four_batches(log: EventLog) -> dict[str, str]:
    """Batches on four threads of tenant ``t``: ``stuck`` (its effect began, then its
    lease ran out: unresolved), ``running`` (effect began), ``done`` (finalized) and
    ``pending``; their ids by thread."""
    from eventlog.interrupts import Finish, Resume, ResumeInput
    from eventlog.interrupts.models import Interrupt
    from eventlog.testing.interrupts import APPROVAL, PAY

    asked = [Interrupt(id="a", reason="confirmation", response_schema=APPROVAL)]
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
            CLOCK.advance(hours=2)
            await log.interrupts.cleanup()
    return batches


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_unresolved_lists_the_batches_whose_effect_has_no_outcome(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """``unresolved``: a batch whose effect is running and one whose claim ran out after
    its effect began (awaiting reconciliation), newest first, paged; not the pending
    batch nor the finished one. ``pending`` lists the pending one alone."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 1)
    async with target.open(operations=[PAY], interrupt_options=OPTIONS, clock=CLOCK) as log:
        batches = await _four_batches(log)
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
def test_a_batch_page_tells_its_claims_effect_and_state(target: BackendTarget) -> None:
    """A batch's page: its state row and each event in words (created, claimed with its
    generation, effect started, lease run out); linked from the list; another tenant's
    batch and a missing one are the same 404."""
    from starlette.testclient import TestClient

    from eventlog.cli.serve.access import Access, Grant
    from eventlog.cli.serve.app import NOT_FOUND, build_app
    from tests.serve.fixtures import TOKEN_A, TOKEN_B, opener

    async def write() -> dict[str, str]:
        async with target.open(operations=[PAY], interrupt_options=OPTIONS,
                               clock=CLOCK) as log:
            return await _four_batches(log)

    batches = asyncio.run(write())
    access = Access([Grant("a", TOKEN_A, frozenset({"t"})),
                     Grant("b", TOKEN_B, frozenset({"u"}))])
    with TestClient(build_app(opener(target), access, {}, "test")) as client:
        page = client.get(f"/t/t/b/{batches['stuck']}",
                          headers={"authorization": f"Bearer {TOKEN_A}"})
        listing = client.get("/t/t?state=unresolved",
                             headers={"authorization": f"Bearer {TOKEN_A}"}).text
        theirs = client.get(f"/t/u/b/{batches['stuck']}",
                            headers={"authorization": f"Bearer {TOKEN_B}"})
        missing = client.get(f"/t/t/b/{uuid.uuid4()}",
                             headers={"authorization": f"Bearer {TOKEN_A}"})
    assert 200 == page.status_code, page.text
    for words in ("unresolved", "claimed", "generation 1", "effect started",
                  "needs a reconcile", 'href="/t/t/s/stuck"'):
        assert words in page.text, words
    assert f'href="/t/t/b/{batches["stuck"]}"' in listing
    assert [(404, NOT_FOUND)] * 2 == [(r.status_code, r.content) for r in (theirs, missing)]


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
