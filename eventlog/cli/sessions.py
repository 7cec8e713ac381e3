"""``eventlog timeline`` (one session's story) and ``eventlog inspect`` (one batch)."""

from __future__ import annotations

import dataclasses
import heapq
from typing import Any

import msgspec
from rich.table import Table
from rich.text import Text

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.render import (
    cell,
    details_as_shown,
    pairs_table,
    plural,
    redact,
    safe,
    summary,
    when,
)
from eventlog.cli.scope import require_session, require_tenant
from eventlog.cli.sealed import Unsealer
from eventlog.cli.story import Timeline, build_timeline
from eventlog.cli.thread_report import (
    inspect_thread,
    print_thread_details,
    thread_exists,
    thread_headline,
    thread_json,
)
from eventlog.cli.thread_story import read_payloads
from eventlog.events.interrupts import batch_stream
from eventlog.interrupts.admin import audit_entry, inspect_batch
from eventlog.interrupts.models import AuditEntry, BatchInspection
from eventlog.log import EventLog
from eventlog.records import RecordedEvent

_AUDIT_PAGE = 500
_STYLES = {"interrupt": "magenta", "resume": "magenta", "task failed": "red"}


# -- timeline --------------------------------------------------------------------------------


async def run_timeline(context: Context) -> int:
    """Read the session's streams, merge them in log order, print the story."""
    args = context.args
    async with context.open() as log:
        streams = await require_session(log, args.tenant, args.session, scan=args.scan)
        events = await read_merged(log, args.tenant, streams)
        payloads = await read_payloads(log, args.tenant, events)
    story = build_timeline(events, payloads)
    if context.json:
        context.print_json(timeline_json(args.tenant, args.session, story))
    else:
        print_timeline(context, args.tenant, args.session, story)
    return EXIT_OK


async def read_merged(log: EventLog, tenant: str, streams: list[str]) -> list[RecordedEvent]:
    """Every event of ``streams``, merged by log position, each sealed field shown opened,
    erased or sealed (`Unsealer.event`)."""
    unsealer = Unsealer(log)
    per_stream = [[await unsealer.event(event) async for event in log.read_stream(tenant, s)]
                  for s in streams]
    return list(heapq.merge(*per_stream, key=lambda event: event.position))


def timeline_json(tenant: str, session: str, story: Timeline) -> dict[str, Any]:
    """The timeline for scripts."""
    return {
        "tenant": tenant, "session": session,
        "runs": [{"number": n, "run_id": run} for run, n in story.runs.items()],
        "batches": [{"number": n, "batch_id": batch} for batch, n in story.batches.items()],
        "checkpoints": story.checkpoints, "duplicates": story.duplicates,
        "tombstones": story.tombstones,
        "threads": [thread_json(thread) for thread in story.threads],
        "entries": [
            {"position": e.position, "recorded_at": e.recorded_at, "stream_id": e.stream_id,
             "version": e.version, "type": e.type, "lane": e.lane, "what": e.what,
             "details": e.details, "duplicate_of": e.duplicate_of, "data": e.fields,
             "actor": e.actor}
            for e in story.entries
        ],
    }


def print_timeline(context: Context, tenant: str, session: str, story: Timeline) -> None:
    """The timeline for people: a headline and one table row per event; then, for a
    framework thread, its questions and answers and its tree of checkpoints."""
    for thread in story.threads:
        context.out.print(thread_headline(tenant, thread))
    if story.runs or story.batches or not story.threads:
        _session_headline(context, tenant, session, story)
    _entries(context, story)
    for thread in story.threads:
        print_thread_details(context.out, thread)


def _session_headline(context: Context, tenant: str, session: str, story: Timeline) -> None:
    context.out.print(Text.assemble(
        ("Session ", "bold"), (session, "bold cyan"), (" of tenant ", "bold"),
        (tenant, "bold cyan"),
        f": {plural(len(story.runs), 'run')}, {plural(story.checkpoints, 'checkpoint')} "
        f"({plural(story.duplicates, 'duplicate')}), "
        f"{plural(len(story.batches), 'interrupt batch', 'interrupt batches')}, "
        f"{plural(story.tombstones, 'tombstone')}",
    ))


def _entries(context: Context, story: Timeline) -> None:
    # A "by" column only when some event names who appended it (older logs look as before).
    by = any(entry.actor is not None for entry in story.entries)
    table = Table("#", "time", "lane", "what", *(["by"] if by else []), "details",
                  title_justify="left")
    for entry in story.entries:
        style = "yellow" if entry.duplicate_of is not None else _STYLES.get(entry.what) or (
            "magenta" if entry.lane.startswith("batch") else None)
        if "UNFINISHED" in entry.details or "FORK" in entry.details:
            style = "bold red" if "UNFINISHED" in entry.details else "bold cyan"
        table.add_row(str(entry.position), when(entry.recorded_at), entry.lane,
                      Text(entry.what, style=style or ""),
                      *([safe(entry.actor or "-")] if by else []), entry.details)
    context.out.print(table)
    for run, number in story.runs.items():
        context.out.print(Text(f"run {number} = {run}", style="dim"))


# -- inspect ---------------------------------------------------------------------------------


async def run_inspect(context: Context) -> int:
    """The batch's safe metadata and every page of its audit trail."""
    args = context.args
    async with context.open() as log:
        await require_tenant(log, args.tenant)
        if args.checkpoint is not None or args.namespace is not None:
            return await inspect_thread(context, log)
        inspection = await inspect_all(log, args.tenant, args.batch)
        if inspection is None and await thread_exists(log, args.tenant, args.batch):
            return await inspect_thread(context, log)
        retired: list[AuditEntry] | None = None
        if inspection is None:
            retired = [audit_entry(event) async for event in
                       log.read_stream(args.tenant, batch_stream(args.batch))]
            if not retired:
                raise CommandError(
                    f"unknown interrupt batch {args.batch!r} in tenant {args.tenant!r} (and "
                    "no thread has that name)")
    if retired is not None:
        _print_retired(context, args.batch, retired)
    elif context.json:
        assert inspection is not None
        context.print_json(redact_inspection(inspection))
    else:
        assert inspection is not None
        print_inspection(context, inspection)
    return EXIT_OK


async def inspect_all(log: EventLog, tenant: str, batch_id: str) -> BatchInspection | None:
    """`InterruptStore.inspect` with every page of the audit trail joined, read from the
    log's read side (the replica, with ``--read-url``)."""
    first = await inspect_batch(log, [tenant], batch_id, _AUDIT_PAGE, None)
    if first is None:
        return None
    audit, cursor = list(first.audit), first.cursor
    while cursor is not None:
        page = await inspect_batch(log, [tenant], batch_id, _AUDIT_PAGE, cursor)
        if page is None:
            break
        audit.extend(page.audit)
        cursor = page.cursor
    return BatchInspection(batch=first.batch, interrupts=first.interrupts, audit=audit,
                           cursor=None)


def redact_inspection(inspection: BatchInspection) -> dict[str, Any]:
    """An inspection for scripts, with any token material masked."""
    return {
        "batch": redact(_fields(inspection.batch)),
        "interrupts": [_fields(item) for item in inspection.interrupts],
        "audit": [{**_fields(entry), "details": redact(details_as_shown(entry.type,
                                                                        entry.details))}
                  for entry in inspection.audit],
    }


def print_inspection(context: Context, inspection: BatchInspection) -> None:
    """The batch for people: its metadata, its questions, its audit trail."""
    batch = inspection.batch
    context.out.print(pairs_table(f"Interrupt batch {batch.batch_id}", [
        ("tenant", batch.tenant_id), ("thread (session)", batch.thread_id),
        ("resumes from", batch.checkpoint_id),
        ("operation", f"{batch.operation.name}@{batch.operation.version}"),
        ("state", batch.state.value), ("version", batch.version),
        ("generation", batch.generation), ("lease expires", batch.lease_expires_at),
        ("answer deadline", batch.approval_expires_at),
        ("effect started", batch.effect_started), ("capture", batch.capture_state),
        ("resolution", batch.resolution), ("reconciled by", batch.reconciled_by),
        ("created", batch.created_at), ("updated", batch.updated_at),
    ]))
    questions = Table("interrupt", "reason", "message", title="Interrupts",
                      title_justify="left")
    for item in inspection.interrupts:
        questions.add_row(item.id, item.reason, cell(item.message, 80))
    context.out.print(questions)
    context.out.print(_audit_table(inspection.audit))


def _audit_table(audit: list[AuditEntry]) -> Table:
    by = any(entry.actor is not None for entry in audit)
    table = Table("v", "#", "time", "type", *(["by"] if by else []), "details",
                  title="Audit trail", title_justify="left")
    for entry in audit:
        table.add_row(str(entry.version), str(entry.position), when(entry.recorded_at),
                      entry.type, *([safe(entry.actor or "-")] if by else []),
                      summary(redact(details_as_shown(entry.type, entry.details)),
                              skip=("batch_id",), width=400))
    return table


def _print_retired(context: Context, batch_id: str, audit: list[AuditEntry]) -> None:
    if context.json:
        context.print_json({"batch_id": batch_id, "retired": True, "audit": [
            {**_fields(entry), "details": redact(details_as_shown(entry.type, entry.details))}
            for entry in audit]})
        return
    context.out.print(Text(f"Interrupt batch {batch_id} was retired from the views after "
                           "the audit retention; its events:", style="bold"))
    context.out.print(_audit_table(audit))


def _fields(value: Any) -> dict[str, Any]:
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.asdict(value)
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}

