"""The index of a tenant (or whole-log) report: one line per session and per framework
thread, with its counts, its time span, its framework and where to read more.

A line links to the subject's section when the page draws it, and otherwise names the
command that writes the subject's own page. Pure functions of recorded events.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape

from eventlog.cli.render import plural, when
from eventlog.cli.thread_story.graph import INTERRUPT
from eventlog.cli.thread_story.values import MAF_ENCODING
from eventlog.events.checkpoints import CheckpointCreated
from eventlog.events.interrupts import BatchCreated
from eventlog.events.threads import ThreadCheckpointPut, ThreadWritesPut
from eventlog.records import RecordedEvent

SESSION, LANGGRAPH, MAF, THREAD = ("session", "LangGraph thread", "Agent Framework workflow",
                                   "thread")


def framework_of(events: Iterable[RecordedEvent]) -> str:
    """What wrote the subject: ``session`` (the checkpoint store), ``LangGraph thread``,
    ``Agent Framework workflow`` or ``thread`` (a thread written by neither adapter);
    a session and a thread of one name read ``session + LangGraph thread``."""
    return tally(events).framework


@dataclass(slots=True)
class Tally:
    """What the index says of a subject, counted event by event (`add`) without keeping
    the events: a tenant's report tallies every subject, then reads only those it draws."""

    events: int = 0
    checkpoints: int = 0
    interrupts: int = 0
    runs: set[str] = field(default_factory=set)
    kinds: list[str] = field(default_factory=list)
    first_recorded: datetime | None = None
    last_recorded: datetime | None = None
    last_position: int = 0

    def add(self, event: RecordedEvent) -> None:
        """Count one more event of the subject (in log order)."""
        self.events += 1
        if self.first_recorded is None:
            self.first_recorded = event.recorded_at
        self.last_recorded, self.last_position = event.recorded_at, event.position
        kind = kind_of_event(event)
        if kind is not None and kind not in self.kinds:
            self.kinds.append(kind)
        payload = event.event
        if isinstance(payload, CheckpointCreated | ThreadCheckpointPut):
            self.checkpoints += 1
            run = (str(payload.run_id) if isinstance(payload, CheckpointCreated)
                   else payload.run_key)
            if run is not None and getattr(payload, "state_encoding", "") != MAF_ENCODING:
                self.runs.add(run)
        elif isinstance(payload, BatchCreated):
            self.interrupts += 1
        elif isinstance(payload, ThreadWritesPut) and not payload.namespace:
            # a subgraph's interrupt is written again by each graph it bubbles up through:
            # the root namespace's writes count each question once
            self.interrupts += sum(w.channel == INTERRUPT for w in payload.writes)

    @property
    def framework(self) -> str:
        """See `framework_of`."""
        kinds = list(self.kinds)
        if len(kinds) > 1 and THREAD in kinds:
            kinds.remove(THREAD)
        return " + ".join(kinds) or SESSION


def tally(events: Iterable[RecordedEvent]) -> Tally:
    """The `Tally` of a subject's events."""
    counted = Tally()
    for event in events:
        counted.add(event)
    return counted


def kind_of_event(event: RecordedEvent) -> str | None:
    """What wrote a subject, as its checkpoint ``event`` tells (None: not a checkpoint)."""
    payload = event.event
    if isinstance(payload, CheckpointCreated):
        return SESSION
    if not isinstance(payload, ThreadCheckpointPut):
        return None
    if payload.state_encoding == MAF_ENCODING:
        return MAF
    return LANGGRAPH if "source" in payload.metadata else THREAD


@dataclass(frozen=True, slots=True)
class SessionLine:
    """One session or thread in the index of a tenant-wide report."""

    tenant: str
    session: str
    framework: str
    events: int
    checkpoints: int
    runs: int | None
    """Distinct runs (None: its checkpoints name no run, as LangGraph's without a
    ``run_id`` and Agent Framework's)."""
    interrupts: int | None
    """Interrupt batches raised (sessions), questions asked (LangGraph interrupts, Agent
    Framework requests for a human); None when unknown (a workflow not drawn: its requests
    are inside its payloads)."""
    first_recorded: datetime | None
    last_recorded: datetime | None
    shown: bool
    findings: tuple[str, ...] = ()
    """What verify found in its streams (``hash_mismatch``, ``truncated``, …): a
    session changed behind the log's back is flagged in the list, not only in its
    section."""


def index_lines(
    subjects: Mapping[tuple[str, str], Tally],
    asked: Mapping[tuple[str, str], int],
    findings: Mapping[tuple[str, str], Sequence[str]] | None = None,
) -> list[SessionLine]:
    """One line per subject in scope (its `Tally`), the latest active first; ``asked``
    holds how many questions each drawn subject asked (as its story tells them),
    ``findings`` what verify found in each subject's streams."""
    found = findings or {}
    lines = [_line(tenant, name, counted, asked.get((tenant, name)),
                   tuple(found.get((tenant, name), ())))
             for (tenant, name), counted in subjects.items()]
    lines.sort(key=lambda line: (line.last_recorded is None, line.last_recorded), reverse=True)
    return lines


def _line(tenant: str, name: str, counted: Tally, asked: int | None,
          findings: tuple[str, ...]) -> SessionLine:
    framework = counted.framework
    known = asked if asked is not None else None if MAF in framework else counted.interrupts
    return SessionLine(
        tenant=tenant, session=name, framework=framework, events=counted.events,
        checkpoints=counted.checkpoints, runs=len(counted.runs) or None, interrupts=known,
        first_recorded=counted.first_recorded, last_recorded=counted.last_recorded,
        shown=asked is not None, findings=findings)


def anchor(tenant: str, session: str) -> str:
    """The id of a subject's section on the page."""
    return "".join(c if c.isalnum() else "-" for c in f"{tenant}-{session}")


def render_index(lines: Sequence[SessionLine]) -> str:
    """The index as a card: a table with a line per subject."""
    drawn = sum(line.shown for line in lines)
    parts = [
        '<section class="card" id="sessions"><h2>Sessions and threads '
        f'<span class="tag">{plural(len(lines), "subject")}, {drawn} drawn below</span></h2>',
        '<table class="index"><tr><th>tenant</th><th>name</th><th>written by</th>'
        "<th class=num>events</th><th class=num>checkpoints</th><th class=num>runs</th>"
        "<th class=num>interrupts</th><th>first recorded</th><th>last recorded</th>"
        "<th>read more</th></tr>"]
    parts.extend(_index_row(line) for line in lines)
    if not lines:
        parts.append('<tr><td colspan="10" class="note">No sessions or threads in scope.'
                     "</td></tr>")
    parts.append("</table></section>")
    return "".join(parts)


def _index_row(line: SessionLine) -> str:
    if line.shown:
        more = f'<a href="#s-{anchor(line.tenant, line.session)}">its section below</a>'
    else:
        more = (f"<code>eventlog report {escape(shlex.quote(line.tenant))} "
                f"{escape(shlex.quote(line.session))}</code>")
    flag = (f' <b class="bad">verify found: {escape(", ".join(line.findings))}</b>'
            if line.findings else "")
    classes = "subject bad-subject" if line.findings else "subject"
    return (f'<tr class="{classes}" data-subject="{escape(line.session)}">'
            f"<td>{escape(line.tenant)}</td><td><b>{escape(line.session)}</b>{flag}</td>"
            f"<td>{escape(line.framework)}</td><td class=num>{line.events}</td>"
            f"<td class=num>{line.checkpoints}</td>"
            f"<td class=num>{'—' if line.runs is None else line.runs}</td>"
            f"<td class=num>{'—' if line.interrupts is None else line.interrupts}</td>"
            f"<td class=time>{escape(when(line.first_recorded))}</td>"
            f"<td class=time>{escape(when(line.last_recorded))}</td><td>{more}</td></tr>")

