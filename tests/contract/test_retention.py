"""Retention passes and legal holds on every backend (memory, SQLite, file, PostgreSQL;
behind PgBouncer in the pgbouncer campaign, on the Citus cluster in the citus one), with
a fake clock: what a policy purges, what it never purges (a hold, an open interrupt
batch, an unresolved effect, a blob a retained record shares), what a pass records, and
that a dry run writes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from eventlog import InvalidInput, OpenLog
from eventlog.checkpoints.thread_records import Payload
from eventlog.events.retention import RETENTION_STREAM, RetentionApplied, RetentionPurged
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.contract.interrupts_admin import claimed, state_of
from eventlog.testing.interrupts import FakeClock, create, event_count, view_differences
from tests.conftest import BACKENDS, CITUS, PGBOUNCER, BackendTarget

pytestmark = pytest.mark.parametrize("target", [*BACKENDS, PGBOUNCER, CITUS], indirect=True)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def rlog(target: BackendTarget, clock: FakeClock) -> AsyncIterator[OpenLog]:
    """An open log on each backend, on the fake clock."""
    async with target.open(clock=clock) as opened:
        assert isinstance(opened, OpenLog)
        yield opened


async def _session(log: OpenLog, session: str, clock: FakeClock, count: int,
                   *, days: float = 1, state: Any = None, tenant: str = "t") -> None:
    """``count`` records in ``session``, ``days`` apart on the clock."""
    for n in range(count):
        await log.checkpoints.create(record(session, {"s": session, "n": n}
                                            if state is None else state,
                                            checkpoint_id=f"{session}-{n}", tenant_id=tenant))
        clock.advance(days=days)


async def _thread(log: OpenLog, thread: str, clock: FakeClock, count: int,
                  *, namespace: str = "", days: float = 1) -> None:
    for n in range(count):
        await log.threads.put("t", thread, f"{n:04d}", namespace=namespace,
                              state=Payload("json", b'{"t": "%s", "n": %d}' % (
                                  thread.encode(), n)),
                              channels={"messages": Payload("json", b'["m%d"]' % n)})
        clock.advance(days=days)


async def _ids(log: OpenLog, session: str) -> list[str | None]:
    return [r.checkpoint_id for r in await log.checkpoints.list("t", session)]


async def _thread_ids(log: OpenLog, thread: str) -> list[str]:
    return sorted(c.checkpoint_id for c in await log.threads.page("t", thread, payloads=False))


async def _passes(log: OpenLog, tenant: str = "t") -> list[Any]:
    return [e.event async for e in log.read_stream(tenant, RETENTION_STREAM)
            if isinstance(e.event, RetentionApplied | RetentionPurged)]


async def test_keep_latest_keeps_that_many_per_session(rlog: OpenLog, clock: FakeClock) -> None:
    """keep_latest=2 leaves each session its two latest records and reads them back."""
    await _session(rlog, "a", clock, 5)
    await _session(rlog, "b", clock, 1)
    report = await rlog.retention.apply("t", keep_latest=2)
    assert (["a-3", "a-4"], ["b-0"], 3, {"s": "a", "n": 4}) == (
        await _ids(rlog, "a"), await _ids(rlog, "b"), report.checkpoints,
        await rlog.checkpoints.read("t", "a", "a-4"))
    assert None is await rlog.checkpoints.read("t", "a", "a-0")


async def test_older_than_purges_by_age_and_empties_whole_sessions(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """older_than=3 days purges records recorded more than 3 days before the pass; a
    session all of whose records are old goes (and is an expired subject)."""
    await _session(rlog, "old", clock, 2)        # days 0, 1
    await _session(rlog, "mixed", clock, 4)      # days 2..5 (mixed-0 is day 2)
    report = await rlog.retention.apply("t", older_than=3)  # now: day 6, cutoff day 3
    assert ([], ["mixed-1", "mixed-2", "mixed-3"], [], ["old"]) == (
        await _ids(rlog, "old"), await _ids(rlog, "mixed"),
        [s.session_id for s in await rlog.checkpoints.sessions("t") if s.session_id == "old"],
        report.expired_subjects)


async def test_both_rules_purge_only_what_both_let_go(rlog: OpenLog, clock: FakeClock) -> None:
    """Given both, a record goes only when it is old AND not among the latest K."""
    await _session(rlog, "a", clock, 6)  # days 0..5, pass at day 6
    await rlog.retention.apply("t", older_than=4.5, keep_latest=4)
    # old enough: days 0, 1 (cutoff 1.5); not among the latest 4: 0, 1 — both go
    assert ["a-2", "a-3", "a-4", "a-5"] == await _ids(rlog, "a")
    await rlog.retention.apply("t", older_than=0.5, keep_latest=3)  # keeps 3 (a-3..a-5)
    assert ["a-3", "a-4", "a-5"] == await _ids(rlog, "a")


async def test_threads_keep_latest_per_namespace_and_older_than(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """Threads (LangGraph's shape): keep_latest per namespace, older_than by put time;
    a retained checkpoint reads back with its state and channels."""
    await _thread(rlog, "th", clock, 4)
    await _thread(rlog, "th", clock, 3, namespace="sub")
    await rlog.retention.apply("t", keep_latest=2)
    assert ["0002", "0003"] == sorted(c.checkpoint_id for c in await rlog.threads.page(
        "t", "th", namespace="", payloads=False))
    got = await rlog.threads.get("t", "th", "0003")
    assert got is not None
    assert (b'{"t": "th", "n": 3}', b'["m3"]') == (
        got.state.data if got.state else None, got.channels["messages"].data)
    assert ["0001", "0002"] == sorted(c.checkpoint_id for c in await rlog.threads.page(
        "t", "th", namespace="sub", payloads=False))
    clock.advance(days=30)
    report = await rlog.retention.apply("t", older_than=10)
    assert ([], ["th"]) == (await _thread_ids(rlog, "th"), report.expired_subjects)


async def test_a_pending_approval_keeps_its_session_whole(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """An open interrupt batch on a session (its thread id) keeps every record of it."""
    await _session(rlog, "thread-1", clock, 4)
    await create(rlog, "t", "thread-1")
    report = await rlog.retention.apply("t", keep_latest=1)
    assert (4, 0, ["thread-1"]) == (
        len(await _ids(rlog, "thread-1")), report.checkpoints, report.open_batches)


async def test_an_unresolved_effect_keeps_its_thread_whole(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """A batch whose effect started and whose lease ran out (unresolved) keeps its thread,
    however old."""
    await _thread(rlog, "thread-1", clock, 3)
    _batch, claim = await claimed(rlog, "t", "thread-1")
    await rlog.interrupts.try_start_effect(claim)
    clock.advance(days=400)
    await rlog.interrupts.cleanup()
    report = await rlog.retention.apply("t", older_than=1)
    assert (["0000", "0001", "0002"], ["thread-1"]) == (
        await _thread_ids(rlog, "thread-1"), report.open_batches)


@pytest.mark.parametrize("stage", ["claimed", "effect_started"])
async def test_a_claimed_or_dispatching_batch_keeps_its_thread_whole(
    rlog: OpenLog, clock: FakeClock, stage: str
) -> None:
    """A batch with a live claim, or whose effect is dispatching, keeps its thread whole
    however old (the other open states: pending and unresolved, above)."""
    await _thread(rlog, "thread-1", clock, 3)
    batch, claim = await claimed(rlog, "t", "thread-1")
    if stage == "effect_started":
        await rlog.interrupts.try_start_effect(claim)
    clock.advance(days=400)
    report = await rlog.retention.apply("t", older_than=1)
    assert (stage, ["0000", "0001", "0002"], ["thread-1"]) == (
        await state_of(rlog, batch), await _thread_ids(rlog, "thread-1"), report.open_batches)


async def test_a_legal_hold_keeps_until_released(rlog: OpenLog, clock: FakeClock) -> None:
    """A held subject survives passes; released, the next pass purges it; both are
    events of the retention stream and verify holds after each pass."""
    await _session(rlog, "case", clock, 3)
    await _thread(rlog, "case", clock, 3)
    hold = await rlog.retention.hold("t", "case", reason="litigation 42")
    first = await rlog.retention.apply("t", keep_latest=1)
    assert (3, 3, ["case"], 0) == (len(await _ids(rlog, "case")),
                                   len(await _thread_ids(rlog, "case")), first.held,
                                   first.checkpoints)
    assert (["case"], "litigation 42") == (
        [h.subject for h in await rlog.retention.holds("t")], hold.reason)
    assert (await rlog.verify()).ok
    assert await rlog.retention.release("t", "case", reason="settled")
    assert not await rlog.retention.release("t", "case")  # nothing to release: no event
    second = await rlog.retention.apply("t", keep_latest=1)
    assert (["case-2"], ["0002"], 4, []) == (
        await _ids(rlog, "case"), await _thread_ids(rlog, "case"), second.checkpoints,
        await rlog.retention.holds("t"))
    assert (await rlog.verify()).ok


async def _named(log: OpenLog, session: str, clock: FakeClock, count: int, subject: str,
                 *, days: float = 1) -> None:
    """``count`` records in ``session`` naming ``subject``, ``days`` apart."""
    for n in range(count):
        await log.checkpoints.create(record(session, {"s": session, "n": n},
                                            checkpoint_id=f"{session}-{n}", subject=subject))
        clock.advance(days=days)


async def test_a_hold_on_a_shared_subject_keeps_every_session_naming_it(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """A hold on a subject that records of two sessions name (a customer's) keeps both
    whole through a pass, while a session naming none is purged; released, the next
    pass purges them too."""
    await _named(rlog, "a", clock, 3, "cust-1")
    await _named(rlog, "b", clock, 3, "cust-1")
    await _session(rlog, "c", clock, 3)
    await rlog.retention.hold("t", "cust-1", reason="litigation 7")
    first = await rlog.retention.apply("t", keep_latest=1)
    assert ([3, 3, 1], ["a", "b"], 2) == (
        [len(await _ids(rlog, s)) for s in ("a", "b", "c")], first.held, first.checkpoints)
    assert await rlog.retention.release("t", "cust-1")
    second = await rlog.retention.apply("t", keep_latest=1)
    assert ([["a-2"], ["b-2"]], [], 4) == (
        [await _ids(rlog, s) for s in ("a", "b")], second.held, second.checkpoints)
    assert (await rlog.verify()).ok


async def test_a_record_naming_a_held_subject_while_a_pass_decides_keeps_its_session(
    rlog: OpenLog, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record naming a held subject that commits after the pass read its session and
    before its batch commits makes the batch conflict: decided again, the session is
    kept whole."""
    await _session(rlog, "a", clock, 3)
    await rlog.retention.hold("t", "cust-1")
    real_query = rlog.storage.query
    raced: list[bool] = []

    async def query(view_query: Any) -> list[dict[str, Any]]:
        rows = await real_query(view_query)
        if view_query.table == "checkpoints" and not raced:  # the pass's plan of "a"
            raced.append(True)
            await rlog.checkpoints.create(record("a", {"late": 1}, checkpoint_id="late",
                                                 subject="cust-1"))
        return rows

    monkeypatch.setattr(rlog.storage, "query", query)
    report = await rlog.retention.apply("t", keep_latest=1)
    assert (4, ["a"], 0) == (len(await _ids(rlog, "a")), report.held, report.checkpoints)


async def test_a_named_subject_expires_with_the_last_record_naming_it(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """A subject two sessions name is not expired while one of them keeps a record; it
    is once neither does (a dry run reports the same), and erased then."""
    await _named(rlog, "a", clock, 2, "cust-1")
    clock.advance(days=20)
    await _named(rlog, "b", clock, 1, "cust-1")
    erased: list[str] = []

    async def erase(tenant: str, subject: str, *, reason: str) -> None:
        erased.append(subject)

    first = await rlog.retention.apply("t", older_than=10, erase=erase)
    clock.advance(days=20)
    dry = await rlog.retention.apply("t", older_than=10, dry_run=True)
    second = await rlog.retention.apply("t", older_than=10, erase=erase)
    assert (["a"], ["b", "cust-1"], ["b", "cust-1"], ["a", "b", "cust-1"]) == (
        first.expired_subjects, dry.expired_subjects, second.expired_subjects, erased)


async def test_holding_twice_keeps_one_hold(rlog: OpenLog) -> None:
    """A second hold of a held subject appends nothing and returns the standing hold."""
    first = await rlog.retention.hold("t", "s", reason="one")
    before = await event_count(rlog)
    again = await rlog.retention.hold("t", "s", reason="two")
    assert (first, before) == (again, await event_count(rlog))


async def test_a_shared_blob_stays_while_a_retained_record_references_it(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """Two sessions with the same state: purging one's record releases its reference;
    the blob stays for the other's retained record."""
    await _session(rlog, "a", clock, 1, state={"same": True})
    await _session(rlog, "b", clock, 1, state={"same": True})
    await _session(rlog, "a", clock, 1, state={"other": 1})  # a-0 of a second round
    report = await rlog.retention.apply("t", keep_latest=1)
    assert ({"same": True}, 1, 0) == (await rlog.checkpoints.read("t", "b", "b-0"),
                                      report.checkpoints, report.blobs_purged)
    assert (await rlog.verify()).ok


async def test_purged_state_blobs_are_deleted(rlog: OpenLog, clock: FakeClock) -> None:
    """A blob no retained record references is gone after the pass, and counted."""
    await _session(rlog, "a", clock, 3)
    report = await rlog.retention.apply("t", keep_latest=1)
    refs = await rlog.blob_refs("t")
    assert (2, 2, 1) == (report.blobs_purged, report.released, len(refs))


async def test_a_dry_run_writes_nothing_and_reports_the_same_plan(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """dry_run decides what a pass would do and appends no event."""
    await _session(rlog, "a", clock, 4)
    await _thread(rlog, "th", clock, 3)
    before = await event_count(rlog)
    dry = await rlog.retention.apply("t", keep_latest=1, dry_run=True)
    assert (before, 5) == (await event_count(rlog), dry.checkpoints)
    real = await rlog.retention.apply("t", keep_latest=1)
    assert ([(p.kind, p.id, p.checkpoints) for p in dry.purged],
            dry.blobs_purged, dry.released) == (
        [(p.kind, p.id, p.checkpoints) for p in real.purged],
        real.blobs_purged, real.released)


async def test_each_pass_is_recorded_with_its_policy_and_ids(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """A pass appends its batches (the ids purged) and a summary naming the policy."""
    await _session(rlog, "a", clock, 3)
    report = await rlog.retention.apply("t", keep_latest=1, older_than=timedelta(hours=1))
    purged, applied = await _passes(rlog)
    assert (["a-0", "a-1"], 1, 1.0 / 24, report.pass_id, 2, report.position is not None) == (
        purged.streams[0].checkpoints, applied.policy.keep_latest,
        applied.policy.older_than_days, applied.pass_id, applied.checkpoints,
        True)
    assert (await rlog.verify()).ok


async def test_small_batches_each_are_one_transaction(rlog: OpenLog, clock: FakeClock) -> None:
    """batch_size bounds each batch: seven records purged in batches of three."""
    await _session(rlog, "a", clock, 8)
    report = await rlog.retention.apply("t", keep_latest=1, batch_size=3)
    batches = [e for e in await _passes(rlog) if isinstance(e, RetentionPurged)]
    assert (7, 3, [3, 3, 1], ["a-7"], True) == (
        report.checkpoints, report.batches,
        [sum(len(s.checkpoints) for s in b.streams) for b in batches], await _ids(rlog, "a"),
        report.longest_batch_s > 0)
    assert (await rlog.verify()).ok


async def test_tenants_are_walls(rlog: OpenLog, clock: FakeClock) -> None:
    """A pass and a hold in one tenant change nothing of another's."""
    await _session(rlog, "a", clock, 3, tenant="other")
    await rlog.retention.hold("t", "a")
    await rlog.retention.apply("t", keep_latest=1)
    assert (3, []) == (len(await rlog.checkpoints.list("other", "a")),
                       await rlog.retention.holds("other"))


async def test_expired_subjects_need_every_record_gone(rlog: OpenLog, clock: FakeClock) -> None:
    """A subject is fully expired only when neither its session nor its thread keeps a
    record: what a keyring's erasure is then called for."""
    await _session(rlog, "x", clock, 2)
    await _session(rlog, "y", clock, 2)
    clock.advance(days=20)
    await _thread(rlog, "y", clock, 1)  # y's thread is young
    erased: list[tuple[str, str, str]] = []

    async def erase(tenant: str, subject: str, *, reason: str) -> None:
        erased.append((tenant, subject, reason))

    dry = await rlog.retention.apply("t", older_than=10, dry_run=True, erase=erase)
    report = await rlog.retention.apply("t", older_than=10, erase=erase)
    assert (["x"], ["x"], [("t", "x", f"retention pass {report.pass_id}: no record remains")],
            ["x"]) == (dry.expired_subjects, report.expired_subjects, erased, report.erased)


@pytest.mark.parametrize(("arguments", "field"), [
    ({}, "policy"), ({"keep_latest": 0}, "keep_latest"), ({"keep_latest": True}, "keep_latest"),
    ({"older_than": -1}, "older_than"), ({"older_than": "5"}, "older_than"),
    ({"keep_latest": 1, "batch_size": 0}, "batch_size"),
])
async def test_a_bad_policy_is_refused_naming_the_field(
    rlog: OpenLog, arguments: dict[str, Any], field: str
) -> None:
    """Bad arguments raise InvalidInput naming the field, and nothing is written."""
    before = await event_count(rlog)
    with pytest.raises(InvalidInput) as raised:
        await rlog.retention.apply("t", **arguments)
    assert (field, before) == (raised.value.field, await event_count(rlog))


async def test_the_views_after_passes_are_a_rebuild_of_the_log(
    rlog: OpenLog, clock: FakeClock
) -> None:
    """Partial removals (records, runs left without one, emptied sessions and threads)
    fold to the views a rebuild of the whole log gives."""
    runs = ("018f0000-0000-7000-8000-00000000000a", "018f0000-0000-7000-8000-00000000000b")
    for run in runs:
        for n in range(3):
            await rlog.checkpoints.create(record("r", {"n": n}, run_id=run,
                                                 checkpoint_id=f"{run[-1]}{n}"))
            clock.advance(days=1)
    await _session(rlog, "gone", clock, 2)
    await _thread(rlog, "th", clock, 3)
    await rlog.retention.apply("t", keep_latest=3)
    first = ([], ["b0", "b1", "b2"], [runs[1]])
    assert first == (await view_differences(rlog), await _ids(rlog, "r"),
                     [str(r.run_id) for r in await rlog.checkpoints.runs("t", "r")])
    clock.advance(days=5)
    await _session(rlog, "young", clock, 1)
    report = await rlog.retention.apply("t", older_than=3)
    assert ([], [], [], ["young-0"], ["gone", "r", "th"]) == (
        await view_differences(rlog), await _ids(rlog, "r"),
        await rlog.checkpoints.runs("t", "r"), await _ids(rlog, "young"),
        report.expired_subjects)


async def test_a_hold_placed_while_a_pass_decides_is_honoured(
    rlog: OpenLog, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hold that commits after the pass read the holds and before its batch commits
    makes the batch conflict on the retention stream: decided again, the held session
    is kept."""
    await _session(rlog, "a", clock, 3)
    real_query = rlog.storage.query
    placed: list[bool] = []

    async def query(view_query: Any) -> list[dict[str, Any]]:
        rows = await real_query(view_query)
        if view_query.table == "checkpoints" and not placed:  # the pass's plan of "a"
            placed.append(True)
            await rlog.retention.hold("t", "a")
        return rows

    monkeypatch.setattr(rlog.storage, "query", query)
    report = await rlog.retention.apply("t", keep_latest=1)
    assert (3, ["a"], 0) == (len(await _ids(rlog, "a")), report.held, report.checkpoints)


async def test_a_create_while_a_pass_decides_is_never_purged_unseen(
    rlog: OpenLog, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create that commits between the pass's read of a session and its batch makes
    the batch conflict: decided again, the new record counts as the latest."""
    await _session(rlog, "a", clock, 3)
    real_query = rlog.storage.query
    raced: list[bool] = []

    async def query(view_query: Any) -> list[dict[str, Any]]:
        rows = await real_query(view_query)
        if view_query.table == "checkpoints" and not raced:
            raced.append(True)
            await rlog.checkpoints.create(record("a", {"late": 1}, checkpoint_id="late"))
        return rows

    monkeypatch.setattr(rlog.storage, "query", query)
    report = await rlog.retention.apply("t", keep_latest=1)
    assert (["late"], ["a-0", "a-1", "a-2"]) == (
        await _ids(rlog, "a"), [c for item in report.purged for c in item.checkpoints])


async def test_an_export_after_passes_imports_to_the_same_views(
    rlog: OpenLog, clock: FakeClock, tmp_path: Any
) -> None:
    """A tenant exported after a hold and passes imports into an empty log with the same
    records, holds and blob references, and verifies there."""
    from eventlog import open_log
    from eventlog.transfer import export_log, import_log

    await _session(rlog, "a", clock, 4)
    await _session(rlog, "gone", clock, 2, days=0.1)
    await _thread(rlog, "th", clock, 3)
    await rlog.retention.hold("t", "th", reason="kept")
    await rlog.retention.apply("t", keep_latest=2)
    path = tmp_path / "t.jsonl"
    with path.open("wb") as sink:
        await export_log(rlog, sink, tenant_id="t")
    async with open_log("memory://") as copy:
        with path.open("rb") as source:
            await import_log(copy, source)
        assert ((await copy.verify()).ok, await _ids(copy, "a"), await _thread_ids(copy, "th"),
                [h.subject for h in await copy.retention.holds("t")],
                await copy.blob_refs("t")) == (
            True, ["a-2", "a-3"], ["0000", "0001", "0002"], ["th"], await rlog.blob_refs("t"))


async def test_a_stream_that_keeps_moving_is_decided_holding_it(
    rlog: OpenLog, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creates that beat the pass three times (the batch, then two tries alone) leave the
    fourth try to decide holding the session's stream: it purges, and every record is
    either kept (the latest) or reported purged."""
    await _session(rlog, "a", clock, 3)
    real_query = rlog.storage.query
    raced: list[str] = []

    async def query(view_query: Any) -> list[dict[str, Any]]:
        rows = await real_query(view_query)
        if view_query.table == "checkpoints" and len(raced) < 3:
            raced.append(f"late-{len(raced)}")
            await rlog.checkpoints.create(record("a", {"late": 1}, checkpoint_id=raced[-1]))
        return rows

    monkeypatch.setattr(rlog.storage, "query", query)
    report = await rlog.retention.apply("t", keep_latest=1)
    purged = [c for item in report.purged for c in item.checkpoints]
    assert (["late-2"], ["a-0", "a-1", "a-2", "late-0", "late-1"], []) == (
        await _ids(rlog, "a"), sorted(purged), report.skipped)
    assert (await rlog.verify()).ok


async def test_with_a_keyring_a_pass_erases_each_subject_left_with_nothing(
        target: BackendTarget, clock: FakeClock, tmp_path: Path) -> None:
    """On an encrypted log a pass erases, unasked, each subject none of whose records
    remain: its key is destroyed, the erasure is recorded, writing it again is refused,
    and a subject that keeps records keeps its key, as a held one does, however old."""
    from eventlog.crypto import init_keyring
    from eventlog.errors import SubjectErased

    init_keyring(tmp_path / "keyring.json")
    async with target.open(clock=clock, keyring=tmp_path / "keyring.json") as log:
        assert isinstance(log, OpenLog)
        await _session(log, "x", clock, 2)
        await _session(log, "h", clock, 2)
        await log.retention.hold("t", "h", reason="litigation")
        clock.advance(days=20)
        await _session(log, "z", clock, 1)
        report = await log.retention.apply("t", older_than=10)
        assert (["x"], ["x"], ["h"]) == (report.expired_subjects, report.erased, report.held)
        assert {"s": "h", "n": 1} == await log.checkpoints.read("t", "h", "h-1")
        assert [] != [e async for e in log.read_stream("t", "erasure:x")]
        with pytest.raises(SubjectErased):
            await log.checkpoints.create(record("x", {"again": True}, tenant_id="t"))
        [kept] = await log.checkpoints.list("t", "z")
        assert {"s": "z", "n": 0} == await log.checkpoints.read("t", "z", str(kept.checkpoint_id))
        assert (await log.verify()).ok
