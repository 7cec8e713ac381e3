"""``eventlog demo``: the library's main job, played end to end on a real log.

An agent books a trip for a person, through the public API only (tenant ``demo``, a new
session every run):

1. run 1 writes checkpoints, then its worker crashes;
2. the session resumes from its first checkpoint: run 2 replays steps 1 and 2 (at-least-once
   duplicates, kept and visible as such: one under a new, store-minted id, one under
   the same id) and goes on;
3. it asks for approval of the payment: an interrupt batch;
4. the person's answer is claimed by worker 1; a second browser tab's answer is rejected
   and appends nothing;
5. worker 1 stalls until its lease runs out; worker 2 takes the answer over (a new
   generation); worker 1 wakes and tries its stale handle: refused, nothing appended;
6. worker 2 commits the effect's dispatch marker (once), sends the payment, completes
   its capture and finalizes the batch; run 2 writes its last checkpoint;
7. the session's timeline, then every hash chain and view verified;
8. the incident report of the session written as one HTML file, and its path printed.

Time is a `DemoClock` (the log's injected clock) starting at the later of now and the
log's last recorded time: the story's minutes pass instantly, and recorded times never go
backwards in the log however often the demo runs. The output says so, with the span the
simulated clock covered next to the wall clock, because recorded times run ahead of it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.text import Text

from eventlog.checkpoints import CheckpointRecord
from eventlog.cli.context import Context, invoked_as
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.render import plural, verdict, when
from eventlog.cli.report import write_report
from eventlog.cli.sessions import print_timeline, read_merged, timeline_json
from eventlog.cli.story import build_timeline
from eventlog.cli.verify import view_findings
from eventlog.face import OpenLog
from eventlog.interrupts import (
    ClaimResult,
    Finish,
    Interrupt,
    InterruptClaim,
    Operation,
    PendingBatch,
    Resume,
    ResumeInput,
)
from eventlog.log import EventLog
from projections.query import ViewQuery
from projections.views import STREAM_HEADS

TENANT = "demo"
OPERATION = Operation("book-trip", "1")
APPROVAL = "approve-payment"
_FLIGHTS = {"flights": ["TP1234 412 EUR", "FR8841 389 EUR"]}


class DemoClock:
    """A clock the story moves forward by hand (a person thinking, a lease running out)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        """Move time forward by ``delta``."""
        self.now += delta


@dataclass
class Story:
    """The demo's state as it plays, and the lines it has printed."""

    context: Context
    log: OpenLog
    clock: DemoClock
    session: str = field(default_factory=lambda: f"trip-{uuid.uuid4().hex[:8]}")
    steps: list[dict[str, Any]] = field(default_factory=list)
    surprises: int = 0
    clock_span: tuple[datetime, datetime] | None = None
    """The simulated clock's first and last reading (set when the story has played)."""

    def act(self, title: str) -> None:
        """Print the heading of the next part of the story."""
        if not self.context.json:
            self.context.out.print(Text(f"\n{title}", style="bold"))

    def say(self, what: str, *, expected: bool = True, **data: Any) -> None:
        """Print (and remember) one thing that happened; count what went unexpectedly."""
        self.surprises += 0 if expected else 1
        self.steps.append({"what": what, "as_expected": expected, **data})
        if not self.context.json:
            mark = ("  ✓ ", "green") if expected else ("  ✗ ", "bold red")
            self.context.out.print(Text.assemble(mark, what))

    async def batch_version(self, batch_id: str) -> int:
        """The batch stream's version, read through the store's public inspect."""
        inspection = await self.log.interrupts.inspect([TENANT], batch_id, limit=1)
        return 0 if inspection is None else inspection.batch.version

    async def checkpoint(
        self, run: uuid.UUID, run_number: int, step: int, name: str, state: Any, *,
        checkpoint_id: str | None = None, parent_id: str | None = None,
    ) -> CheckpointRecord:
        """Write one checkpoint and say so."""
        self.clock.advance(timedelta(seconds=3))
        record = await self.log.checkpoints.create(CheckpointRecord(
            tenant_id=TENANT, session_id=self.session, run_id=run, checkpoint_id=checkpoint_id,
            parent_id=parent_id, step=step, state=state, metadata={"node": name},
        ))
        self.say(f"run {run_number} wrote checkpoint {record.checkpoint_id} (step {step}, "
                 f"{name}) at position {record.position}",
                 checkpoint_id=record.checkpoint_id, step=step, position=record.position)
        return record


async def run(context: Context) -> int:
    """Play the story, print the timeline, verify; exit 1 if anything went unexpectedly."""
    clock = DemoClock(datetime.now(UTC))
    async with context.open(upgrade=True, create=True, clock=clock,
                            operations=[OPERATION]) as log:
        clock.now = max(clock.now, await _last_recorded(log) + timedelta(seconds=1))
        story = Story(context, log, clock)
        started = clock.now
        if not context.json:
            context.out.print(Text.assemble(
                ("eventlog demo", "bold"), f": tenant {TENANT}, session ",
                (story.session, "bold cyan"), f", log {context.shown_url()}"))
            context.out.print(Text(
                f"The clock is simulated: it starts at {when(started)} and the story's "
                "minutes (a person answering, a lease running out) pass at once, so the "
                "recorded times run ahead of the wall clock. Use positions, or the recorded "
                "times `eventlog log` shows, for --as-of.", style="dim"))
        batch = await play(story)
        story.clock_span = (started, clock.now)
        ok = await finale(story, batch)
    return EXIT_OK if ok and story.surprises == 0 else EXIT_FINDINGS


async def play(story: Story) -> PendingBatch:
    """Acts 1 to 6; returns the approval batch."""
    resume_from = await first_run(story)
    run_2, approval_checkpoint = await resumed_run(story, resume_from)
    batch = await ask_approval(story, approval_checkpoint)
    answer, first = await answers(story, batch)
    second = await lease_runs_out(story, batch, answer, first)
    await dispatch(story, batch, second)
    story.act("7. Run 2 goes on after the approval")
    await story.checkpoint(run_2, 2, 4, "booked",
                           {"booking": "LIS-7K2Q", "paid_eur": 412.0},
                           checkpoint_id="booked", parent_id=approval_checkpoint.checkpoint_id)
    return batch


async def first_run(story: Story) -> CheckpointRecord:
    """Run 1 writes three checkpoints, then crashes; returns where to resume from."""
    story.act("1. Run 1 plans the trip, then its worker crashes")
    run = uuid.uuid4()
    plan = await story.checkpoint(run, 1, 0, "plan", {"goal": "Lisbon, 12-15 March",
                                                     "budget_eur": 500},
                                  checkpoint_id="plan")
    search = await story.checkpoint(run, 1, 1, "search-flights", _FLIGHTS,
                                    checkpoint_id="search-flights",
                                    parent_id=plan.checkpoint_id)
    await story.checkpoint(run, 1, 2, "pick-flight", {"chosen": "TP1234"},
                           checkpoint_id="pick-flight", parent_id=search.checkpoint_id)
    story.clock.advance(timedelta(seconds=20))
    story.say("run 1's worker crashed after step 2 (the log needs no event for that)")
    return plan


async def resumed_run(
    story: Story, resume_from: CheckpointRecord
) -> tuple[uuid.UUID, CheckpointRecord]:
    """Run 2 resumes from the first checkpoint and replays steps 1 and 2 (duplicates)."""
    story.act(f"2. Resume from {resume_from.checkpoint_id} (step {resume_from.step}): run 2 "
              "replays steps 1 and 2, at least once")
    latest = await story.log.checkpoints.latest(TENANT, story.session)
    story.say(f"latest checkpoint before resuming: {latest.checkpoint_id if latest else None}; "
              f"resuming from the earlier {resume_from.checkpoint_id}")
    run = uuid.uuid4()
    search = await story.checkpoint(run, 2, 1, "search-flights", _FLIGHTS,
                                    parent_id=resume_from.checkpoint_id)
    await story.checkpoint(run, 2, 2, "pick-flight", {"chosen": "TP1234"},
                           checkpoint_id="pick-flight", parent_id=search.checkpoint_id)
    approval = await story.checkpoint(run, 2, 3, "request-approval",
                                      {"awaiting": APPROVAL, "amount_eur": 412.0},
                                      checkpoint_id="request-approval",
                                      parent_id="pick-flight")
    records = await story.log.checkpoints.list(TENANT, story.session)
    steps = [record.step for record in records]
    story.say(f"the session lists {plural(len(records), 'record')}: steps {steps} (at-least-once: "
              "the replayed steps are kept, one under a new id, one under the same id)",
              expected=steps == [0, 1, 2, 1, 2, 3])
    return run, approval


async def ask_approval(story: Story, checkpoint: CheckpointRecord) -> PendingBatch:
    """Run 2 stops to ask the person: one interrupt batch, durable before it is shown."""
    story.act("3. Run 2 asks the person to approve the payment")
    assert checkpoint.checkpoint_id is not None
    batch = await story.log.interrupts.create(
        TENANT, story.session,
        [Interrupt(id=APPROVAL, reason="confirmation",
                   message="Pay 412.00 EUR to Example Air for flight TP1234?",
                   response_schema={"type": "object", "required": ["approved"],
                                    "properties": {"approved": {"type": "boolean"}}})],
        checkpoint.checkpoint_id, operation=OPERATION,
    )
    story.say(f"interrupt batch {batch.batch_id} created, resuming from "
              f"{batch.checkpoint_id}; answer due by {when(batch.approval_expires_at)}",
              batch_id=batch.batch_id)
    return batch


async def answers(story: Story, batch: PendingBatch) -> tuple[ResumeInput, InterruptClaim]:
    """The person's answer is claimed; a second tab's answer is rejected."""
    story.act("4. The person approves; a second browser tab answers too")
    story.clock.advance(timedelta(minutes=2))
    answer = _answer(batch, {"approved": True})
    first = await story.log.interrupts.try_claim(TENANT, answer)
    story.say(f"worker 1 claimed the answer: generation {_generation(first)}, lease until "
              f"{when(first.claim.expires_at)}" if first.claim else
              f"worker 1's claim was rejected: {first.reason}",
              expected=first.claim is not None, generation=_generation(first))
    assert first.claim is not None
    before = await story.batch_version(batch.batch_id)
    second_tab = await story.log.interrupts.try_claim(
        TENANT, _answer(batch, {"approved": False}))
    after = await story.batch_version(batch.batch_id)
    story.say(f"the second tab's answer was rejected ({second_tab.reason}); the batch "
              f"stayed at version {after}: nothing appended",
              expected=second_tab.claim is None and before == after,
              reason=str(second_tab.reason))
    return answer, first.claim


async def lease_runs_out(
    story: Story, batch: PendingBatch, answer: ResumeInput, stale: InterruptClaim
) -> InterruptClaim:
    """Worker 1 stalls past its lease; worker 2 takes over; worker 1's handle is stale."""
    story.act("5. Worker 1 stalls; its lease runs out; worker 2 takes the answer over")
    story.clock.now = stale.expires_at + timedelta(seconds=30)
    story.say(f"(the demo clock jumped to {when(story.clock.now)}: worker 1's lease "
              "expired, no effect had started)")
    taken = await story.log.interrupts.try_claim(TENANT, answer)
    story.say(f"worker 2 claimed the same answer: generation {_generation(taken)}",
              expected=taken.claim is not None and taken.claim.generation > stale.generation,
              generation=_generation(taken))
    assert taken.claim is not None
    before = await story.batch_version(batch.batch_id)
    effect = await story.log.interrupts.try_start_effect(stale)
    finished = await story.log.interrupts.finish(stale, Finish.FINALIZE)
    after = await story.batch_version(batch.batch_id)
    story.say(f"worker 1 woke up with its stale handle (generation {stale.generation}): "
              f"start effect → {effect}, finish → {finished}; batch still at version "
              f"{after}: harmless", expected=not effect and not finished and before == after)
    return taken.claim


async def dispatch(story: Story, batch: PendingBatch, claim: InterruptClaim) -> None:
    """Worker 2: capture, the one dispatch marker, the payment, the outcome, finalize."""
    story.act("6. Worker 2 pays, exactly once, and finishes the batch")
    capture = await story.log.interrupts.start_capture(claim)
    story.say(f"capture started under generation {claim.generation}",
              expected=capture is not None)
    assert capture is not None
    started = await story.log.interrupts.try_start_effect(claim)
    story.say("dispatch marker committed: from now on the payment may go out, once",
              expected=started)
    again = await story.log.interrupts.try_start_effect(claim)
    story.say(f"asking for the marker again → {again} (at most one per batch, ever)",
              expected=not again)
    story.clock.advance(timedelta(seconds=2))
    story.say("payment sent to Example Air (simulated): reference PAY-93F1")
    completed = await story.log.interrupts.complete_capture(
        capture, "completed", json.dumps({"payment_ref": "PAY-93F1", "amount_eur": 412.0}))
    story.say("capture completed with the run's response", expected=completed)
    finalized = await story.log.interrupts.finish(claim, Finish.FINALIZE)
    story.say(f"batch finalized by generation {claim.generation}", expected=finalized)


async def finale(story: Story, batch: PendingBatch) -> bool:
    """Print the session's timeline and verify every chain and view; True if all is well."""
    log, context = story.log, story.context
    streams = [f"session:{story.session}", f"interrupt-batch:{batch.batch_id}"]
    timeline = build_timeline(await read_merged(log, TENANT, streams))
    await settle_or_warn(context, log)
    report = await log.verify()
    with context.progress() as progress:
        differences = await view_findings(log, None, progress)
    ok = report.ok and not differences
    written = await write_report(context, log, TENANT, story.session)
    if context.json:
        context.print_json({
            "url": context.shown_url(), "tenant": TENANT, "session": story.session,
            "batch_id": batch.batch_id, "steps": story.steps, "report": written.path,
            "clock": _clock_json(story.clock_span),
            "timeline": timeline_json(TENANT, story.session, timeline),
            "verify": {"ok": ok, "streams": report.streams, "events": report.events,
                       "chain_problems": len(report.problems),
                       "view_differences": len(differences)},
        })
        return ok
    context.out.print(Text("\nWhat the log recorded", style="bold"))
    print_timeline(context, TENANT, story.session, timeline)
    context.out.print(verdict(
        f"\nHash chains of every stream ({plural(report.streams, 'stream')}, "
        f"{plural(report.events, 'event')})",
        report.ok, f"{len(report.problems)} broken"))
    context.out.print(verdict("Every view against a rebuild from the log", not differences,
                              plural(len(differences), "row differs", "rows differ")))
    if story.clock_span is not None:
        first, last = story.clock_span
        context.out.print(Text(
            f"\nRecorded times run from {when(first)} to {when(last)} on the simulated "
            f"clock; the wall clock says {when(datetime.now(UTC))}.", style="dim"))
    claims = [entry.position for entry in timeline.entries if entry.what == "claimed"]
    _next_steps(context, story.session, batch.batch_id, claims[0] if claims else 1)
    context.out.print(Text.assemble(("\nIncident report: ", "bold"), written.path,
                                    " (open it in a browser)"))
    return ok


def _next_steps(context: Context, session: str, batch_id: str, claimed_at: int) -> None:
    url = context.connection_args()
    eventlog = invoked_as()
    context.out.print(Text("\nLook closer:", style="bold"))
    for command in (
        f"{eventlog} timeline {TENANT} {session}{url}",
        f"{eventlog} inspect {TENANT} {batch_id}{url}",
        f"{eventlog} log --tenant {TENANT} --session {session}{url}",
        f"{eventlog} replay --as-of {claimed_at} --tenant {TENANT} --session {session}{url}"
        "   # the views while worker 1 held its claim",
        f"{eventlog} report {TENANT} {session} --as-of {claimed_at} -o as-of-claim.html{url}"
        "   # the same moment, drawn",
        f"{eventlog} verify{url}",
    ):
        context.out.print(f"  {command}")


def _clock_json(span: tuple[datetime, datetime] | None) -> dict[str, Any]:
    """The simulated clock for scripts: its first and last reading, and the wall clock."""
    first, last = span if span is not None else (None, None)
    return {"simulated": True, "started": first, "ended": last,
            "wall_clock_at_end": datetime.now(UTC)}


def _answer(batch: PendingBatch, payload: dict[str, Any]) -> ResumeInput:
    return ResumeInput(thread_id=batch.thread_id, batch_id=batch.batch_id,
                       responses=[Resume(interrupt_id=APPROVAL, status="resolved",
                                         payload=payload)])


def _generation(result: ClaimResult) -> int | None:
    return None if result.claim is None else result.claim.generation


async def _last_recorded(log: EventLog) -> datetime:
    rows = await log.query(ViewQuery(
        STREAM_HEADS, {}, order_by=("updated_at",), descending=True, limit=1,
        columns=("updated_at",),
    ))
    return rows[0]["updated_at"] if rows else datetime.min.replace(tzinfo=UTC)
