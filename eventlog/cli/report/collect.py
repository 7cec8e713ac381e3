"""Reading what a report shows, through the log's public read side only.

One session: its streams through `EventLog.read_stream`, merged by position. A tenant or
the whole log: a pass of `EventLog.read_all` attributing events to sessions (a checkpoint
names its session, a batch's creation its thread, a batch's later events follow their
stream) that keeps only each session's `Tally`, then, once the sessions to draw are
chosen, a second pass that keeps the events of those alone: memory follows what is drawn,
not the size of the scope. Verify: `EventLog.verify` for the chains, the view comparison
``verify`` runs, and the events that do not decode. The state as of a moment: `projections.rebuild`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rich.progress import Progress

from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.options import Moment
from eventlog.cli.render import cell, when
from eventlog.cli.report.index import Tally, tally
from eventlog.cli.report.model import SessionReport, build_session_report
from eventlog.cli.report.page import Undecodable, VerifySummary
from eventlog.cli.report.threads import step_views
from eventlog.cli.report.values import StateView, state_views, wanted_digests
from eventlog.cli.sealed import Unsealer
from eventlog.cli.sessions import read_merged
from eventlog.cli.thread_story import read_payloads
from eventlog.cli.verify import describe, view_findings
from eventlog.events.interrupts import BatchCreated
from eventlog.events.threads import ThreadCheckpointPut, ThreadEvent
from eventlog.log import EventLog, SpilledViews
from eventlog.records import RecordedEvent
from projections.query import In, ViewQuery
from projections.rebuilding import rebuild

_PAGE = 1000
SessionKey = tuple[str, str]


@dataclass
class Scan:
    """Every session in scope, tallied; the events, in log order, of those read whole
    (`read_chosen`); what was left out."""

    tallies: dict[SessionKey, Tally] = field(default_factory=dict)
    sessions: dict[SessionKey, list[RecordedEvent]] = field(default_factory=dict)
    after_moment: int = 0
    """Events of the scope recorded after the as-of moment."""
    last: RecordedEvent | None = None
    """The scope's latest event (by position) up to the moment."""
    tenant: str | None = None
    """The tenant scanned (None: the whole log), for `read_chosen`."""
    as_of: int | datetime | None = None
    owners: dict[tuple[str, str], SessionKey] = field(default_factory=dict)
    """Each stream's session, as the scan learned it ((tenant, stream) -> session)."""


def before(event: RecordedEvent, as_of: int | datetime | None) -> bool:
    """Whether ``event`` belongs to the log as it stood at ``as_of`` (None: now)."""
    if as_of is None:
        return True
    if isinstance(as_of, int):
        return event.position <= as_of
    return event.recorded_at <= as_of


def cut(events: Sequence[RecordedEvent], as_of: int | datetime | None) -> tuple[
        list[RecordedEvent], int]:
    """The events up to ``as_of`` (the prefix), and how many came later."""
    kept: list[RecordedEvent] = []
    for event in events:
        if not before(event, as_of):
            return kept, len(events) - len(kept)
        kept.append(event)
    return kept, 0


async def one_session(
    log: EventLog, tenant: str, session: str, streams: list[str],
    as_of: int | datetime | None,
) -> Scan:
    """The session's events (its streams merged by position), cut at ``as_of``."""
    events, later = cut(await read_merged(log, tenant, streams), as_of)
    latest = max(events, key=lambda event: event.position, default=None)
    return Scan({(tenant, session): tally(events)}, {(tenant, session): events}, later, latest,
                tenant, as_of)


async def scan_sessions(
    log: EventLog, tenant: str | None, as_of: int | datetime | None
) -> Scan:
    """Every session of the tenant (or the whole log) tallied, cut at ``as_of``; no
    session's events are kept (`read_chosen` reads those drawn)."""
    scan = Scan(tenant=tenant, as_of=as_of)
    owner = scan.owners  # (tenant, stream) -> session
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=tenant)
        if not page.events:
            return scan
        for event in page.events:
            key = _session_of(event, owner)
            if key is None:
                continue
            if before(event, as_of):
                scan.tallies.setdefault(key, Tally()).add(event)
                if scan.last is None or event.position > scan.last.position:
                    scan.last = event
            else:
                scan.after_moment += 1
        cursor = page.cursor


async def read_chosen(log: EventLog, scan: Scan, keys: Sequence[SessionKey]) -> None:
    """Read the events of the sessions ``keys`` into ``scan.sessions``: the first pass's
    count of each, in the same order (the log is append-only, so a session's first N
    events then are its first N now), stopping once every one is whole."""
    wanted = {key: scan.tallies[key].events for key in keys if key not in scan.sessions}
    if not wanted:
        return
    chosen: dict[SessionKey, list[RecordedEvent]] = {key: [] for key in wanted}
    unsealer = Unsealer(log)  # sealed fields shown opened, erased or sealed
    unfinished = len(wanted)
    owner: dict[tuple[str, str], SessionKey] = {}
    cursor: str | None = None
    while unfinished:
        page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=scan.tenant)
        if not page.events:
            break
        for event in page.events:
            key = _session_of(event, owner)  # every event: it learns the batch streams
            if key is None or key not in wanted or not before(event, scan.as_of):
                continue
            events = chosen[key]
            if len(events) < wanted[key]:
                events.append(await unsealer.event(event))
                unfinished -= len(events) == wanted[key]
        cursor = page.cursor
    scan.sessions.update(chosen)


def _session_of(event: RecordedEvent, owner: dict[tuple[str, str], SessionKey]) -> (
        SessionKey | None):
    stream = (event.tenant_id, event.stream_id)
    known = owner.get(stream)
    if known is not None:
        return known
    payload = event.event
    session: object = (payload.thread_id if isinstance(payload, BatchCreated | ThreadEvent)
                       else getattr(payload, "session_id", None))
    if not isinstance(session, str):  # an undecodable event: its stream names its subject
        for prefix in ("session:", "thread:"):
            if event.stream_id.startswith(prefix):
                session = event.stream_id.removeprefix(prefix)
    if not isinstance(session, str):
        return None
    owner[stream] = (event.tenant_id, session)
    return owner[stream]


async def verify_summary(
    log: EventLog, tenant: str | None, progress: Progress
) -> VerifySummary:
    """The chains, the views and the undecodable events of the tenant (or whole log)."""
    chains = progress.add_task("checking hash chains", total=None)
    report = await log.verify(tenant)
    progress.update(chains, visible=False)
    undecodable: list[RecordedEvent] = []
    differences = await view_findings(log, tenant, progress, undecodable=undecodable)
    return VerifySummary(
        streams=report.streams, events=report.events, problems=list(report.problems),
        view_differences=[f"{d.table} {', '.join(cell(k, 40) for k in d.key)}: "
                          f"{describe(d)}" for d in differences],
        undecodable=[undecodable_finding(event) for event in undecodable],
        scope="the whole log" if tenant is None else f"tenant {tenant}",
    )


def findings_by_subject(scan: Scan, verify: VerifySummary) -> dict[SessionKey, list[str]]:
    """What verify found, by the session (or thread) whose stream it was found in: each
    finding's kind, once, in the order found (``hash_mismatch``, ``truncated``, …)."""
    found: dict[SessionKey, list[str]] = {}
    located = [(p.tenant_id, p.stream_id, p.kind) for p in verify.problems]
    located += [(u.tenant_id, u.stream_id, "undecodable_event") for u in verify.undecodable]
    for tenant, stream, kind in located:
        key = scan.owners.get((tenant, stream)) or _named_by(tenant, stream)
        if key is not None and kind not in found.setdefault(key, []):
            found[key].append(kind)
    return found


def _named_by(tenant: str, stream: str) -> SessionKey | None:
    """The session or thread a stream's own name says it belongs to."""
    for prefix in ("session:", "thread:"):
        if stream.startswith(prefix):
            return tenant, stream.removeprefix(prefix)
    return None


def undecodable_finding(event: RecordedEvent) -> Undecodable:
    """The verify finding for an event whose bytes do not decode as its type."""
    payload = event.event
    error = payload.error if isinstance(payload, UndecodableEvent) else ""
    return Undecodable(event.tenant_id, event.stream_id, event.version, event.position,
                       event.type, error)


Select = Callable[[ViewQuery], Awaitable[list[dict[str, Any]]]]


async def states(
    log: EventLog, reports: Sequence[SessionReport], as_of: int | datetime | None
) -> dict[str, list[tuple[str, str]]]:
    """Per session: what the views said at the moment. Now: the live views (verify has
    compared them with a rebuild); at an earlier moment: rebuilt from the log alone, into
    a temporary file, and read back for the chosen sessions only."""
    if as_of is None:
        return {report.session: await _state(report, log.query) for report in reports}
    with SpilledViews() as views:
        if isinstance(as_of, int):
            await rebuild(log, until_position=as_of, into=views)
        else:
            await rebuild(log, until_time=as_of, into=views)

        async def select(query: ViewQuery) -> list[dict[str, Any]]:
            return views.select(query)

        return {report.session: await _state(report, select) for report in reports}


async def _state(report: SessionReport, select: Select) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    session = {"tenant_id": report.tenant, "session_id": report.session}
    for row in await select(ViewQuery("checkpoint_sessions", session)):
        pairs.append(("latest checkpoint", f"{row['latest_checkpoint_id']} "
                                           f"(step {row['latest_step']})"))
    numbers = {lane.ident: lane.key for lane in report.lanes if lane.kind == "batch"}
    if numbers:
        for row in await select(ViewQuery("interrupt_batches", {
                "tenant_id": report.tenant, "batch_id": In(tuple(numbers))},
                order_by=("batch_id",))):
            effect = ", effect started" if row.get("effect_started") else ""
            pairs.append((numbers[row["batch_id"]],
                          f"{row['state']}, generation {row['generation']}{effect}"))
    return pairs


async def state_values(
    log: EventLog, scan: Scan, reports: Sequence[SessionReport]
) -> dict[int, StateView]:
    """The state of each listed checkpoint and its difference from its parent's, by
    position (one blob read per drawn session)."""
    views: dict[int, StateView] = {}
    for report in reports:
        events = scan.sessions[(report.tenant, report.session)]
        listed = {row.position for row in report.rows}
        blobs = await Unsealer(log).blobs(report.tenant, wanted_digests(events, listed))
        views.update(state_views(events, listed, blobs))
        sizes = {e.position: e.event.state_size for e in events
                 if isinstance(e.event, ThreadCheckpointPut)}
        views.update(step_views(report.stories, listed, sizes))
    return views


def latest_sessions(scan: Scan, limit: int) -> list[SessionKey]:
    """The ``limit`` sessions with the latest events, latest first."""
    keyed = sorted(scan.tallies.items(), key=lambda item: item[1].last_position,
                   reverse=True)
    return [key for key, _counted in keyed[:limit]]


async def session_reports(
    log: EventLog, scan: Scan, keys: Sequence[SessionKey], verify: VerifySummary
) -> list[SessionReport]:
    """The model of each chosen session, with verify's broken links marked and its
    framework threads told from their payloads."""
    reports = []
    for tenant, session in keys:
        events = scan.sessions[(tenant, session)]
        payloads = await read_payloads(log, tenant, events)
        reports.append(build_session_report(tenant, session, events, verify.problems,
                                            payloads))
    return reports


@dataclass
class Drawn:
    """What is drawn of each chosen session: the report's model of it (and of its
    framework threads), the views' state, and each listed checkpoint's state with its
    difference from its parent's. The report's page and the console's thread page both
    draw from this, built once here."""

    reports: list[SessionReport]
    states: dict[str, list[tuple[str, str]]]
    values: dict[int, StateView]


async def draw(
    log: EventLog, scan: Scan, keys: Sequence[SessionKey], verify: VerifySummary,
    as_of: int | datetime | None, *, past_states: bool = True,
) -> Drawn:
    """Read the chosen sessions whole (`read_chosen`) and build what is drawn of them.
    ``past_states=False`` leaves out the views' state at an earlier ``as_of`` (a rebuild of
    the whole log into a temporary file: the console does not do that per page view)."""
    await read_chosen(log, scan, keys)
    reports = await session_reports(log, scan, keys, verify)
    shown = (await states(log, reports, as_of) if as_of is None or past_states
             else {})
    return Drawn(reports, shown, await state_values(log, scan, reports))


def moment_text(as_of: Moment | None, last: RecordedEvent | None) -> str | None:
    """How the page says what it is "as of"."""
    if as_of is None:
        return None
    moment = as_of.describe()
    if last is None:
        return f"{moment} (nothing recorded yet)"
    return f"{moment} (last event shown: #{last.position}, recorded {when(last.recorded_at)})"
