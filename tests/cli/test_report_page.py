"""The incident report's model and page, from recorded events alone (no database, no
browser)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from eventlog import Event, default_registry
from eventlog.checkpoints import CheckpointCreated
from eventlog.cli.report.model import MAX_ROWS, build_session_report
from eventlog.cli.report.page import ReportData, VerifySummary, render_page
from eventlog.events import interrupts as ev
from eventlog.interrupts import Interrupt, Resume
from eventlog.records import RecordedEvent, StreamProblem
from tests.cli.helpers import START

RUN_1, RUN_2 = uuid.UUID(int=1), uuid.UUID(int=2)
DIGEST = "ab" * 32
TOKEN_DIGEST = "f00d" * 16
BATCH = "b-1"


def recorded(*events: tuple[str, Event]) -> list[RecordedEvent]:
    """``(stream, event)`` pairs as the log would hand them back, at positions 1, 2, 3 …"""
    versions: dict[str, int] = {}
    result = []
    for position, (stream, event) in enumerate(events, start=1):
        tag, data = default_registry.encode(event)
        versions[stream] = versions.get(stream, 0) + 1
        result.append(RecordedEvent(
            position=position, event_id=uuid.uuid4(), tenant_id="t", stream_id=stream,
            version=versions[stream], recorded_at=START + timedelta(seconds=position),
            type=tag, data=data, prev_hash=bytes(32), hash=bytes([position % 256]) * 32,
            event=event))
    return result


def checkpoint(run: uuid.UUID, checkpoint_id: str, step: int,
               parent: str | None = None) -> tuple[str, Event]:
    """A checkpoint of session ``s``."""
    return "session:s", CheckpointCreated(
        session_id="s", run_id=run, checkpoint_id=checkpoint_id, parent_id=parent,
        step=step, state_digest=DIGEST, state_encoding="json", state_size=3)


def batch(event: Event) -> tuple[str, Event]:
    """An event of the batch's stream."""
    return f"interrupt-batch:{BATCH}", event


def claimed(generation: int) -> tuple[str, Event]:
    """A claim of the batch by ``generation``."""
    return batch(ev.BatchClaimed(
        batch_id=BATCH, generation=generation, token_digest=TOKEN_DIGEST,
        lease_expires_at=START + timedelta(minutes=5),
        responses=(Resume(interrupt_id="ok", status="resolved", payload={"ok": True}),)))


def story() -> list[RecordedEvent]:
    """Run 1 writes three checkpoints and crashes; run 2 resumes from the first and
    replays steps 1 and 2; a batch is claimed twice (the first lease ran out), then the
    second claim dispatches and finishes."""
    return recorded(
        checkpoint(RUN_1, "plan", 0), checkpoint(RUN_1, "search", 1, "plan"),
        checkpoint(RUN_1, "pick", 2, "search"),
        checkpoint(RUN_2, "search-2", 1, "plan"), checkpoint(RUN_2, "pick", 2, "search-2"),
        checkpoint(RUN_2, "ask", 3, "pick"),
        batch(ev.BatchCreated(
            batch_id=BATCH, thread_id="s", checkpoint_id="ask", operation_name="pay",
            operation_version="1", interrupts=(Interrupt(id="ok", reason="confirmation"),),
            approval_expires_at=START + timedelta(days=1))),
        claimed(1), claimed(2),
        batch(ev.EffectStarted(batch_id=BATCH, generation=2)),
        batch(ev.BatchFinalized(batch_id=BATCH, generation=2)),
    )


def page(events: list[RecordedEvent], **extra: object) -> str:
    """The page of session ``s`` of tenant ``t`` made of ``events``."""
    problems: list[StreamProblem] = list(extra.pop("problems", []))  # type: ignore[call-overload]
    report = build_session_report("t", "s", events, problems)
    verify = VerifySummary(streams=2, events=len(events), problems=problems,
                           view_differences=[])
    data = ReportData(title="report", source="sqlite:///x.db",
                      generated_at=datetime(2030, 1, 2, tzinfo=UTC), verify=verify,
                      sessions=[report], **extra)  # type: ignore[arg-type]
    return render_page(data)


def test_one_lane_per_run_and_per_batch() -> None:
    """Two runs and one batch make three lanes, in the order they first wrote."""
    report = build_session_report("t", "s", story())
    assert [("run 1", "run"), ("run 2", "run"), ("batch 1", "batch")] == [
        (lane.key, lane.kind) for lane in report.lanes]


def test_replayed_steps_are_duplicate_marks_on_the_resumed_run() -> None:
    """Run 2's replays of steps 1 and 2 are duplicates, on run 2's lane."""
    marks = build_session_report("t", "s", story()).marks
    assert [(4, "run 2"), (5, "run 2")] == [
        (m.position, m.lane) for m in marks if m.kind == "duplicate"]


def test_the_resume_is_a_parent_link_across_lanes() -> None:
    """Run 2's first checkpoint links back to its parent on run 1's lane; each replay to
    the record it repeats; the batch to the checkpoint it resumes from."""
    report = build_session_report("t", "s", story())
    links = {(report.marks[link.source].position, report.marks[link.target].position,
              link.kind) for link in report.links}
    assert {(1, 4, "parent"), (2, 4, "replay"), (3, 5, "replay"), (6, 7, "resumes")} == links


def test_a_claim_superseded_by_a_later_generation_is_marked_stale() -> None:
    """The first claim, taken over by generation 2 before it finished, is stale."""
    marks = build_session_report("t", "s", story()).marks
    assert [(8, "stale"), (9, "claim"), (10, "effect"), (11, "finish")] == [
        (m.position, m.kind) for m in marks if m.lane == "batch 1" and m.position > 7]


def test_the_checkpoint_tree_shows_both_branches_with_duplicates_tagged() -> None:
    """plan has two children (run 1's search and run 2's replay); duplicates are tagged."""
    tree = build_session_report("t", "s", story()).tree
    assert [("plan", 0, False), ("search", 1, False), ("pick", 2, False),
            ("search-2", 1, True), ("pick", 2, True), ("ask", 3, False)] == [
        (row.checkpoint_id, row.depth, row.duplicate is not None) for row in tree]


def test_done_by_names_the_claim_a_decision_was_made_under() -> None:
    """"Done by" says what it names: a claim's decision ``claim generation 1``; a
    checkpoint nothing (its run is its lane); neither names a principal."""
    rows = build_session_report("t", "s", story()).rows
    assert [("run 1", "", ""), ("batch 1", "claim generation 1", "")] == [
        (row.lane, row.done_by, row.principal) for row in (rows[0], rows[7])]


def test_the_page_is_self_contained() -> None:
    """No external stylesheet, script, image or font: nothing to fetch."""
    html = page(story())
    assert not re.search(r"<link|\ssrc=|url\(|@import", html)
    assert ["http://www.w3.org/2000/svg"] == re.findall(r"https?://[^\"' <]+", html)


def test_tokens_never_appear_in_the_page() -> None:
    """A claim's token digest is masked in the table and in the embedded events."""
    html = page(story())
    assert TOKEN_DIGEST not in html
    assert "(redacted)" in html


def test_event_data_cannot_close_the_script_element() -> None:
    """A checkpoint id holding ``</script>`` stays inside the embedded JSON, escaped."""
    html = page(recorded(checkpoint(RUN_1, "</script><b>x", 0)))
    assert 2 == html.count("</script>")
    assert "<b>x" not in html


def test_the_first_broken_link_is_highlighted() -> None:
    """verify's first broken link marks its event's row and mark and is listed."""
    problem = StreamProblem(tenant_id="t", stream_id="session:s", version=2,
                            kind="hash_mismatch", detail="stored hash differs")
    html = page(story(), problems=[problem])
    assert 'id="verify-badge" data-ok="false"' in html
    assert re.search(r'<tr class="ev broken" id="ev-2"', html)
    assert re.search(r'class="mark k-checkpoint broken" data-pos="2"', html)
    assert 'href="#ev-2"' in html


def test_as_of_is_said_at_the_top() -> None:
    """A page as of a moment says so above everything else, with what it left out."""
    html = page(story(), as_of="position 8", left_after=3)
    banner = html.index('id="as-of"')
    assert banner < html.index('id="verify"')
    assert "As of position 8" in html
    assert "3 later events not shown" in html


def test_ten_thousand_checkpoints_are_summarized_under_ten_megabytes() -> None:
    """A session of 10,000 checkpoints: the table lists a bounded sample, the tree folds
    the straight chain, the lanes share columns, and the page stays far below 10 MB."""
    events = recorded(checkpoint(RUN_1, "c0", 0), *(
        checkpoint(RUN_1, f"c{i}", i, f"c{i - 1}") for i in range(1, 10_000)))
    report = build_session_report("t", "s", events)
    html = page(events)
    assert len(report.rows) <= MAX_ROWS
    assert len(report.tree) < 20
    assert len(html.encode()) < 10 * 1024 * 1024
    assert html.count('class="bin ') + html.count('class="mark ') <= 700


def test_a_session_without_events_yet_renders() -> None:
    """As of a moment before the session's first event: a note, no lanes, no error."""
    html = page([], as_of="position 1", left_after=11)
    assert "No events of this session yet at this moment." in html
    assert 'class="lane ' not in html


def test_the_facts_agree_with_their_counts() -> None:
    """One batch and one superseded claim read "1 interrupt batch", "1 superseded claim"."""
    facts = re.search(r'class="card session".*?<div class="facts">(.*?)</div>', page(story()),
                      re.S)
    assert facts is not None
    text = re.sub(r"<[^>]+>", "", facts.group(1))
    assert (True, True, True, False) == (
        "2 runs" in text, "1 interrupt batch" in text, "1 superseded claim" in text,
        "1 interrupt batches" in text)
