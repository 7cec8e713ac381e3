"""A session's story: its events turned into timeline entries, with duplicates marked.

Pure functions over recorded events (no I/O), so what the timeline says is tested
without a database. A checkpoint is a *duplicate* when an earlier record of the session
(since its last tombstone) has the same checkpoint id or the same step: the at-least-once
contract keeps both, and a resumed run that replays steps writes them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.render import event_fields, plural, summary, when
from eventlog.cli.thread_story import Line, ThreadStory, build_thread_story
from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.events import threads as th
from eventlog.events.checkpoints import (
    CheckpointCreated,
    SessionCheckpointsRemoved,
    SessionDeleted,
)
from eventlog.records import RecordedEvent


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of a timeline."""

    position: int
    recorded_at: datetime
    stream_id: str
    version: int
    type: str
    lane: str
    """Whose line it is: ``run 2``, ``batch 1`` or ``session``."""
    what: str
    details: str
    duplicate_of: int | None = None
    """The position of the earlier record this checkpoint repeats."""
    actor: str | None = None
    """Who appended the event (None: nobody named)."""
    source: RecordedEvent | None = field(default=None, repr=False, compare=False)
    """The event itself, for `fields`."""

    @property
    def fields(self) -> dict[str, Any]:
        """The event's fields as `event_fields` shows them, worked out when asked (the
        timeline's JSON asks; the report and the console do not: decoding every event's
        fields was half of a 1,000-step thread's page)."""
        return event_fields(self.source) if self.source is not None else {}


@dataclass
class Timeline:
    """A session's entries in log order, and what they add up to."""

    entries: list[Entry] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    """Run id → its number, in the order runs first wrote."""
    batches: dict[str, int] = field(default_factory=dict)
    """Batch id → its number, in the order batches were created."""
    checkpoints: int = 0
    duplicates: int = 0
    tombstones: int = 0
    threads: list[ThreadStory] = field(default_factory=list)
    """The framework threads among the events, each told in its framework's words."""


class _Builder:
    """Walks the events once, remembering what each duplicate check needs."""

    def __init__(self, lines: Mapping[int, Line] | None = None) -> None:
        self.timeline = Timeline()
        self.lines = lines or {}
        self.by_id: dict[str, int] = {}
        self.by_step: dict[int, tuple[int, str]] = {}

    def add(self, event: RecordedEvent) -> None:
        payload = event.event
        if isinstance(payload, UndecodableEvent):
            lane = self._lane_of(event)
            self._entry(event, lane, "undecodable",
                        f"{event.type} does not decode: {payload.error}")
        elif isinstance(payload, CheckpointCreated):
            self._checkpoint(event, payload)
        elif isinstance(payload, SessionDeleted):
            self.timeline.tombstones += 1
            self.by_id.clear()
            self.by_step.clear()
            self._entry(event, "session", "tombstone",
                        f"session deleted: {plural(payload.checkpoints, 'checkpoint')} left "
                        "the views, their unshared state was purged (the events stay)")
        elif isinstance(payload, SessionCheckpointsRemoved):
            self.timeline.tombstones += 1
            for checkpoint_id in payload.checkpoint_ids:
                self.by_id.pop(checkpoint_id, None)
            self._entry(event, "session", "retention",
                        f"retention: {plural(len(payload.versions), 'checkpoint')} past the "
                        "tenant's policy left the views, their unshared state was purged "
                        f"(the events stay): {', '.join(payload.checkpoint_ids)}")
        elif isinstance(payload, _THREAD_EVENTS):
            self._thread_event(event, payload)
        elif isinstance(payload, ev.BatchCreated):
            number = self.timeline.batches.setdefault(payload.batch_id,
                                                      len(self.timeline.batches) + 1)
            self._entry(event, f"batch {number}", "batch created", _created(payload))
        else:
            self._batch_event(event, payload)

    def _checkpoint(self, event: RecordedEvent, created: CheckpointCreated) -> None:
        run = str(created.run_id)
        number = self.timeline.runs.setdefault(run, len(self.timeline.runs) + 1)
        earlier = self.by_id.get(created.checkpoint_id)
        reason = f"same checkpoint id as #{earlier}" if earlier is not None else None
        step = self.by_step.get(created.step)
        if earlier is None and step is not None:
            earlier, reason = step[0], f"replays step {created.step} of {step[1]} (#{step[0]})"
        self.by_id[created.checkpoint_id] = event.position
        self.by_step.setdefault(created.step, (event.position, f"run {number}"))
        self.timeline.checkpoints += 1
        details = f"{created.checkpoint_id} step {created.step}"
        if created.parent_id is not None:
            details += f" after {created.parent_id}"
        details += f", state {created.state_size} B"
        what = "checkpoint"
        if reason is not None:
            self.timeline.duplicates += 1
            what, details = "checkpoint (duplicate)", f"{details}; {reason}"
        self._entry(event, f"run {number}", what, details, duplicate_of=earlier)

    def _lane_of(self, event: RecordedEvent) -> str:
        """The lane of an event by its stream (``session`` unless a known batch's)."""
        batch_id = event.stream_id.removeprefix("interrupt-batch:")
        number = self.timeline.batches.get(batch_id)
        return f"batch {number}" if number is not None else "session"

    def _thread_event(self, event: RecordedEvent, payload: Event) -> None:
        """A framework thread's puts, writes and tombstones (one lane per namespace), in
        the framework's words (`thread_story`)."""
        told = self.lines[event.position]
        self._count(payload)
        self._entry(event, told.lane, told.what, told.details,
                    duplicate_of=self._put_again(event, payload))

    def _count(self, payload: Event) -> None:
        if isinstance(payload, th.ThreadCheckpointPut):
            self.timeline.checkpoints += 1
        elif isinstance(payload, th.ThreadDeleted | th.ThreadCheckpointsRemoved):
            self.timeline.tombstones += 1

    def _put_again(self, event: RecordedEvent, payload: Event) -> int | None:
        """The position of an earlier put of the same checkpoint (since its removal)."""
        if isinstance(payload, th.ThreadDeleted):
            self.by_id = {k: v for k, v in self.by_id.items() if not k.startswith("thread:")}
        elif isinstance(payload, th.ThreadCheckpointsRemoved):
            for k in payload.removed:
                self.by_id.pop(f"thread:{k.namespace}:{k.checkpoint_id}", None)
        if not isinstance(payload, th.ThreadCheckpointPut):
            return None
        key = f"thread:{payload.namespace}:{payload.checkpoint_id}"
        earlier = self.by_id.get(key)
        self.by_id[key] = event.position
        if earlier is not None:
            self.timeline.duplicates += 1
        return earlier

    def _batch_event(self, event: RecordedEvent, payload: Event) -> None:
        describe = _BATCH_LINES.get(type(payload))
        batch_id = getattr(payload, "batch_id", None)
        number = self.timeline.batches.get(batch_id) if isinstance(batch_id, str) else None
        lane = f"batch {number}" if number is not None else "session"
        if describe is None:
            self._entry(event, lane, event.type, summary(event_fields(event)))
            return
        what, details = describe(payload)
        self._entry(event, lane, what, details)

    def _entry(
        self, event: RecordedEvent, lane: str, what: str, details: str,
        duplicate_of: int | None = None,
    ) -> None:
        self.timeline.entries.append(Entry(
            position=event.position, recorded_at=event.recorded_at, stream_id=event.stream_id,
            version=event.version, type=event.type, lane=lane, what=what, details=details,
            duplicate_of=duplicate_of, actor=event.actor, source=event,
        ))


def build_timeline(
    events: Iterable[RecordedEvent], payloads: Mapping[bytes, bytes] | None = None
) -> Timeline:
    """The timeline of a session's events, given in log order. With the payload bytes of
    its framework threads (`thread_story.read_payloads`), those are told in the
    framework's words."""
    events = list(events)
    stories, lines = tell_threads(events, payloads or {})
    builder = _Builder(lines)
    for event in events:
        builder.add(event)
    builder.timeline.threads = stories
    return builder.timeline


def tell_threads(
    events: list[RecordedEvent], payloads: Mapping[bytes, bytes]
) -> tuple[list[ThreadStory], dict[int, Line]]:
    """Each thread's story among ``events`` and the timeline line of each of its events."""
    by_thread: dict[str, list[RecordedEvent]] = {}
    for event in events:
        if isinstance(event.event, th.ThreadEvent):
            by_thread.setdefault(event.event.thread_id, []).append(event)
    stories, lines = [], {}
    for thread_id, found in by_thread.items():
        story, told = build_thread_story(thread_id, found, payloads)
        stories.append(story)
        lines.update(told)
    return stories, lines


_THREAD_EVENTS = (th.ThreadCheckpointPut, th.ThreadWritesPut, th.ThreadCopied,
                  th.ThreadAdopted, th.ThreadDeleted, th.ThreadCheckpointsRemoved)


def _created(created: ev.BatchCreated) -> str:
    questions = ", ".join(f"{item.id} ({item.reason})" for item in created.interrupts)
    return (f"{created.batch_id}: asks {questions}; operation {created.operation_name}@"
            f"{created.operation_version}; resumes from {created.checkpoint_id}; "
            f"answer by {when(created.approval_expires_at)}")


def _claimed(claimed: ev.BatchClaimed) -> tuple[str, str]:
    answers = ", ".join(
        f"{item.interrupt_id}={item.status}"
        + (f" {summary({'payload': item.payload})}" if item.payload is not None else "")
        for item in claimed.responses
    )
    return ("claimed", f"generation {claimed.generation}, lease until "
                       f"{when(claimed.lease_expires_at)}; answers: {answers}")


def _reconciled(ruling: ev.BatchReconciled) -> tuple[str, str]:
    note = f"; note: {ruling.note}" if ruling.note else ""
    return ("reconciled", f"by {ruling.actor}: {ruling.resolution}; evidence "
                          f"{summary(ruling.evidence)}{note}")


def _gen(what: str, text: str) -> Callable[[Any], tuple[str, str]]:
    return lambda payload: (what, text.format(g=payload.generation))


_BATCH_LINES: dict[type[Event], Callable[[Any], tuple[str, str]]] = {
    ev.BatchClaimed: _claimed,
    ev.CaptureStarted: _gen("capture started", "under generation {g}"),
    ev.CaptureCompleted: lambda p: ("capture completed",
                                    f"{p.outcome} under generation {p.generation}"),
    ev.EffectStarted: _gen("effect started", "dispatch marker committed by generation {g}"),
    ev.BatchFinalized: _gen("finalized", "by generation {g}"),
    ev.BatchReleased: _gen("released", "by generation {g}: pending again"),
    ev.ClaimExpired: _gen("lease expired", "generation {g} let its lease run out: pending again"),
    ev.EffectUnresolved: _gen("unresolved", "generation {g}'s lease ran out after its "
                                            "dispatch marker: needs a reconcile"),
    ev.ApprovalExpired: lambda _p: ("expired", "nobody answered before the deadline"),
    ev.CaptureAbandoned: _gen("capture abandoned", "its claim (generation {g}) died"),
    ev.BatchReconciled: _reconciled,
    ev.BatchRetired: lambda _p: ("retired", "left the views after the audit retention "
                                            "(the events stay)"),
}
