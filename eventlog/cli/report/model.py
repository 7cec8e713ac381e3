"""What a report shows, computed from recorded events without I/O.

A session's events (in log order) become swimlanes — one per run, one per interrupt batch,
one per framework thread namespace and fork branch — with marks, the links between them
(a resumed run's first checkpoint after its parent on an earlier run's lane; a replayed
step back to the step it repeats; a batch to the checkpoint it resumes from; a question to
its answer; a branch point to its fork), where runs stopped without finishing, the
checkpoint tree and the rows of the event table. A framework thread is read through its
`thread_story` (`eventlog.cli.report.threads` turns that into these pieces). Large
sessions are summarized here, not in the page: the table lists a bounded sample (every
event that is not a plain checkpoint, the first and last checkpoints, the duplicates)
and says how many it left out; the tree folds long straight chains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.render import event_json, short_hash, when
from eventlog.cli.report.index import framework_of
from eventlog.cli.report.parts import CHAIN_EDGE, Deadline, Lane, Link, Mark, Row, Stop, TreeRow
from eventlog.cli.report.threads import (
    branch_lanes,
    captions,
    done_by,
    story_kinds,
    thread_kind,
    thread_links,
    thread_tree,
    unfinished_stops,
)
from eventlog.cli.story import Entry, build_timeline
from eventlog.cli.thread_story import ThreadStory
from eventlog.events import interrupts as ev
from eventlog.events import threads as th
from eventlog.events.checkpoints import CheckpointCreated
from eventlog.records import RecordedEvent, StreamProblem

MAX_ROWS = 400
"""The most events one session's table lists (and embeds in full)."""
EDGE_CHECKPOINTS = 60
"""How many of the first and of the last checkpoints the table lists."""
MAX_LINKS = 400
"""The most cross-lane links drawn for one session."""

_KIND_OF_TYPE = {
    ev.BatchCreated: "created", ev.BatchClaimed: "claim", ev.CaptureStarted: "capture",
    ev.CaptureCompleted: "capture", ev.CaptureAbandoned: "capture", ev.EffectStarted: "effect",
    ev.BatchFinalized: "finish", ev.BatchReleased: "finish", ev.ApprovalExpired: "expired",
    ev.ClaimExpired: "expired", ev.EffectUnresolved: "unresolved",
    ev.BatchReconciled: "reconcile", ev.BatchRetired: "other",
}


@dataclass
class SessionReport:
    """Everything the page shows about one session."""

    tenant: str
    session: str
    lanes: list[Lane]
    marks: list[Mark]
    links: list[Link]
    links_left_out: int
    tree: list[TreeRow]
    rows: list[Row]
    rows_left_out: int
    checkpoints: int
    duplicates: int
    stale_claims: int
    first_recorded: datetime | None
    last_recorded: datetime | None
    counts: dict[str, int] = field(default_factory=dict)
    """How many marks of each kind."""
    framework: str = "session"
    """What wrote it (`eventlog.cli.report.index.framework_of`)."""
    stops: list[Stop] = field(default_factory=list)
    """Where runs stopped, or framework steps were left, without finishing."""
    stories: list[ThreadStory] = field(default_factory=list)
    """Its framework threads, each in its framework's words."""
    deadlines: list[Deadline] = field(default_factory=list)
    """Where the leases of superseded claims ran out."""


def build_session_report(
    tenant: str, session: str, events: Sequence[RecordedEvent],
    problems: Iterable[StreamProblem] = (), payloads: Mapping[bytes, bytes] | None = None,
) -> SessionReport:
    """The report of one session from its events in log order; ``problems`` (verify's
    first broken links) mark the events they name; ``payloads`` (the bytes of its
    framework threads' payloads) let those be told in their framework's words."""
    found = list(problems)
    broken = {(p.stream_id, p.version) for p in found if p.tenant_id == tenant}
    timeline = build_timeline(events, payloads)
    stories = timeline.threads
    moved = branch_lanes(stories)
    entries = [replace(e, lane=moved[e.position]) if e.position in moved else e
               for e in timeline.entries]
    clock, said = elapsed(events), captions(stories)
    special = story_kinds(stories)
    marks = [_mark(i, entry, event, (event.stream_id, event.version) in broken, clock[i],
                   said.get(event.position, ""), special.get(event.position))
             for i, (entry, event) in enumerate(zip(entries, events, strict=True))]
    marks = _mark_stale_claims(marks, events)
    index_of = {event.position: i for i, event in enumerate(events)}
    links = _links(events, entries) + thread_links(stories, index_of)
    rows, left_out = _rows(entries, events, marks, done_by(stories))
    counts = Counter(mark.kind for mark in marks)
    stops = run_stops(events, entries) + unfinished_stops(
        stories, index_of, [entry.lane for entry in entries])
    return SessionReport(
        tenant=tenant, session=session, lanes=_lanes(timeline.runs, timeline.batches, entries),
        marks=marks, links=links[:MAX_LINKS], links_left_out=max(0, len(links) - MAX_LINKS),
        tree=_marked_tree(checkpoint_tree(events, entries) + [
            row for story in stories for row in thread_tree(story)], tenant, events, found),
        rows=rows, rows_left_out=left_out,
        checkpoints=timeline.checkpoints, duplicates=timeline.duplicates,
        stale_claims=counts.get("stale", 0),
        first_recorded=events[0].recorded_at if events else None,
        last_recorded=events[-1].recorded_at if events else None,
        counts=dict(counts), framework=framework_of(events), stops=stops, stories=stories,
        deadlines=lapsed_leases(events, marks),
    )


def _marked_tree(rows: list[TreeRow], tenant: str, events: Sequence[RecordedEvent],
                 problems: Sequence[StreamProblem]) -> list[TreeRow]:
    """The tree's rows, each checkpoint whose event verify found wrong carrying the kind
    (a forged or changed checkpoint row must not look like the others)."""
    kinds = {(p.stream_id, p.version): p.kind for p in problems if p.tenant_id == tenant}
    at = {event.position: kinds[key] for event in events
          if (key := (event.stream_id, event.version)) in kinds}
    return [replace(row, problem=at[row.position])
            if not row.folded and row.position in at else row for row in rows]


def elapsed(events: Sequence[RecordedEvent]) -> list[float]:
    """Seconds from the first event to each, never going back: a writer whose clock is
    behind an earlier one's adds no time (log order is the order)."""
    result: list[float] = []
    total, previous = 0.0, None
    for event in events:
        if previous is not None:
            total += max(0.0, (event.recorded_at - previous).total_seconds())
        previous = event.recorded_at if previous is None else max(previous, event.recorded_at)
        result.append(total)
    return result


def _lanes(runs: dict[str, int], batches: dict[str, int], entries: list[Entry]) -> list[Lane]:
    lanes = [Lane(f"run {n}", "run", run) for run, n in runs.items()]
    lanes += [Lane(f"batch {n}", "batch", batch) for batch, n in batches.items()]
    known = {lane.key for lane in lanes}
    for entry in entries:  # a thread's lanes (one per namespace), then the session's
        if entry.lane not in known and entry.lane != "session":
            known.add(entry.lane)
            kind = ("thread" if entry.lane in ("graph", "workflow") else
                    "branch" if " · branch " in entry.lane else "subgraph")
            lanes.append(Lane(entry.lane, kind, ""))
    if any(entry.lane == "session" for entry in entries):
        lanes.append(Lane("session", "session", ""))
    return lanes


def _mark(
    index: int, entry: Entry, event: RecordedEvent, broken: bool, at: float, caption: str,
    special: str | None,
) -> Mark:
    payload = event.event
    if isinstance(payload, UndecodableEvent):
        kind = "undecodable"
    elif isinstance(payload, CheckpointCreated):
        kind = "duplicate" if entry.duplicate_of is not None else "checkpoint"
    elif isinstance(payload, th.ThreadEvent):
        kind = special or thread_kind(entry.what)
    elif entry.what == "tombstone":
        kind = "tombstone"
    else:
        kind = _KIND_OF_TYPE.get(type(payload), "other")
    label = f"#{event.position} {entry.what}: {entry.details}"
    return Mark(index, event.position, entry.lane, kind, label[:300], broken, at, caption)


def _mark_stale_claims(marks: list[Mark], events: Sequence[RecordedEvent]) -> list[Mark]:
    """A claim whose batch was claimed again before it finished went stale: its lease ran
    out, and whatever its worker tried afterwards was refused (refusals append nothing;
    the later claim is where the log shows it)."""
    live: dict[str, int] = {}  # batch id -> index of its live claim
    result = list(marks)
    for index, event in enumerate(events):
        payload = event.event
        if isinstance(payload, ev.BatchClaimed):
            earlier = live.get(payload.batch_id)
            if earlier is not None:
                old = result[earlier]
                result[earlier] = replace(
                    old, kind="stale",
                    label=f"{old.label} — superseded at #{event.position} by generation "
                          f"{payload.generation}: this claim's later attempts were refused")
            live[payload.batch_id] = index
        elif not isinstance(payload, ev.CaptureStarted | ev.CaptureCompleted
                            | ev.EffectStarted):
            batch_id = getattr(payload, "batch_id", None)
            if isinstance(batch_id, str):
                live.pop(batch_id, None)
    return result


def lapsed_leases(events: Sequence[RecordedEvent], marks: list[Mark]) -> list[Deadline]:
    """Where each superseded claim's lease ran out, within the session's span."""
    if not events:
        return []
    first, span = events[0].recorded_at, marks[-1].at
    found = []
    for event, mark in zip(events, marks, strict=True):
        payload = event.event
        if mark.kind == "stale" and isinstance(payload, ev.BatchClaimed):
            at = (payload.lease_expires_at - first).total_seconds()
            if 0 <= at <= span:
                label = (f"generation {payload.generation}'s lease ran out "
                         f"({when(payload.lease_expires_at)})")
                found.append(Deadline(mark.lane, at, label))
    return found


def run_stops(events: Sequence[RecordedEvent], entries: list[Entry]) -> list[Stop]:
    """Runs that stopped without finishing: a later run redid their work (it replays one
    of their steps, or resumes from one of their checkpoints that was not their last)
    after they wrote their last event. The log needs no event for a crash; this is it."""
    last = {entry.lane: index for index, entry in enumerate(entries)}
    index_of = {event.position: index for index, event in enumerate(events)}
    by_id: dict[str, int] = {}
    stops: dict[str, Stop] = {}
    for index, (event, entry) in enumerate(zip(events, entries, strict=True)):
        payload = event.event
        if not isinstance(payload, CheckpointCreated):
            continue
        parent = by_id.get(payload.parent_id or "")
        redone = [(parent, f"resumed from its earlier checkpoint {payload.parent_id}")
                  ] if parent is not None and parent < last[entries[parent].lane] else []
        if entry.duplicate_of is not None and entry.duplicate_of in index_of:
            redone.append((index_of[entry.duplicate_of], f"replayed its step {payload.step}"))
        for source, how in redone:
            other = entries[source].lane
            if other != entry.lane and other not in stops and last[other] < index:
                stops[other] = Stop(last[other], other, f"{other} stopped here without "
                                    f"finishing: {entry.lane} {how} at #{event.position}")
        by_id[payload.checkpoint_id] = index
    return sorted(stops.values(), key=lambda stop: stop.index)


def _links(events: Sequence[RecordedEvent], entries: list[Entry]) -> list[Link]:
    latest_by_id: dict[str, int] = {}
    index_by_position = {event.position: i for i, event in enumerate(events)}
    links: list[Link] = []
    for index, (event, entry) in enumerate(zip(events, entries, strict=True)):
        payload = event.event
        if isinstance(payload, CheckpointCreated):
            parent = latest_by_id.get(payload.parent_id or "")
            if parent is not None and entries[parent].lane != entry.lane:
                links.append(Link(parent, index, "parent"))
            if entry.duplicate_of is not None and entry.duplicate_of in index_by_position:
                links.append(Link(index_by_position[entry.duplicate_of], index, "replay"))
            latest_by_id[payload.checkpoint_id] = index
        elif isinstance(payload, ev.BatchCreated):
            source = latest_by_id.get(payload.checkpoint_id)
            if source is not None:
                links.append(Link(source, index, "resumes"))
    return links


def _rows(
    entries: list[Entry], events: Sequence[RecordedEvent], marks: list[Mark],
    who: Mapping[int, str],
) -> tuple[list[Row], int]:
    checkpoints = [i for i, m in enumerate(marks) if m.kind == "checkpoint" and not m.broken]
    plain = set(checkpoints[EDGE_CHECKPOINTS:-EDGE_CHECKPOINTS])
    chosen = [i for i in range(len(events)) if i not in plain]
    if len(chosen) > MAX_ROWS:  # keep the first and last halves of what is left
        half = MAX_ROWS // 2
        notable = [i for i in chosen if marks[i].broken or marks[i].kind in _NOTABLE]
        chosen = sorted(set(chosen[:half] + chosen[-half:] + notable[:half]))
    rows = [_row(entries[i], events[i], marks[i], who.get(events[i].position))
            for i in chosen]
    return rows, len(events) - len(rows)


_NOTABLE = frozenset({"undecodable", "question", "answer", "failed", "fork", "tombstone"})
"""Kinds of marks the table lists even when it must leave events out."""


def _row(entry: Entry, event: RecordedEvent, mark: Mark, who: str | None) -> Row:
    return Row(
        position=event.position, recorded_at=event.recorded_at, type=event.type,
        lane=entry.lane, principal=event.actor or "",
        done_by=who if who is not None else decided_by(event),
        hash_prefix=short_hash(event.hash),
        what=entry.what if mark.kind != "stale" else f"{entry.what} (superseded)",
        details=entry.details, duplicate=mark.kind == "duplicate", broken=mark.broken,
        full=event_json(event),
    )


def decided_by(event: RecordedEvent) -> str:
    """What a session event's own fields name as doing it, saying what it is: the person
    a reconciliation names (``reconciler ops``), the claim an interrupt decision was made
    under (``claim generation 2``); empty otherwise (a checkpoint's run is its lane)."""
    payload = event.event
    if isinstance(payload, ev.BatchReconciled):
        return f"reconciler {payload.actor}"
    generation = getattr(payload, "generation", None)
    if isinstance(generation, int):
        return f"claim generation {generation}"
    return ""


_Node = tuple[int, CheckpointCreated, Entry]


def checkpoint_tree(events: Sequence[RecordedEvent], entries: list[Entry]) -> list[TreeRow]:
    """The checkpoint records as a tree (a child under the latest earlier record of its
    parent id), depth first; straight stretches longer than ``2 * CHAIN_EDGE + 1`` are
    folded into one line (which counts as one level of depth)."""
    nodes, children, roots = _forest(events, entries)
    rows: list[TreeRow] = []
    stack = [(root, 0) for root in reversed(roots)]
    while stack:  # iterative: a straight chain of 10,000 must not recurse 10,000 deep
        node, depth = stack.pop()
        chain = [node]
        while len(children.get(chain[-1], ())) == 1:
            chain.append(children[chain[-1]][0])
        shown = _chain_rows([nodes[i] for i in chain], depth)
        rows.extend(shown)
        below = shown[-1].depth + 1
        stack.extend((child, below) for child in reversed(children.get(chain[-1], [])))
    return rows


def _forest(
    events: Sequence[RecordedEvent], entries: list[Entry]
) -> tuple[list[_Node], dict[int, list[int]], list[int]]:
    """The checkpoint nodes, each node's children and the roots (indexes into nodes)."""
    nodes: list[_Node] = []
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    latest_by_id: dict[str, int] = {}
    for event, entry in zip(events, entries, strict=True):
        payload = event.event
        if not isinstance(payload, CheckpointCreated):
            continue
        node = len(nodes)
        nodes.append((event.position, payload, entry))
        parent = latest_by_id.get(payload.parent_id or "")
        (children.setdefault(parent, []) if parent is not None else roots).append(node)
        latest_by_id[payload.checkpoint_id] = node
    return nodes, children, roots


def _chain_rows(chain: list[_Node], depth: int) -> list[TreeRow]:
    def row(item: _Node, level: int) -> TreeRow:
        position, created, entry = item
        why = entry.details.split("; ", 1)[1] if entry.duplicate_of is not None else None
        return TreeRow(level, position, created.checkpoint_id, created.step, entry.lane, why)

    if len(chain) <= 2 * CHAIN_EDGE + 1:
        return [row(item, depth + i) for i, item in enumerate(chain)]
    hidden = chain[CHAIN_EDGE:-CHAIN_EDGE]
    duplicates = [item for item in hidden if item[2].duplicate_of is not None]
    fold = TreeRow(depth + CHAIN_EDGE, hidden[0][0], "", hidden[0][1].step, hidden[0][2].lane,
                   f"{len(duplicates)} of them duplicates" if duplicates else None,
                   folded=len(hidden))
    after = depth + CHAIN_EDGE + 1
    return [*(row(item, depth + i) for i, item in enumerate(chain[:CHAIN_EDGE])), fold,
            *(row(item, after + i) for i, item in enumerate(chain[-CHAIN_EDGE:]))]
