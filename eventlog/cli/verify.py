"""``eventlog verify``: every hash chain, and every stored view against a rebuild.

Two library calls do the work: `EventLog.verify` recomputes each stream's SHA-256 chain
from the stored bytes, and `projections.compare_views` folds the whole log (into
`SpilledViews`, a temporary file, so memory stays bounded at any size) and compares every
view row with the stored one, a page at a time. Any finding exits with status 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.progress import Progress
from rich.table import Table

from eventlog.cli.context import Context, add_command
from eventlog.cli.digest import read_digest_file
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK
from eventlog.cli.horizon import settle, settle_or_warn
from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.options import positive_int
from eventlog.cli.progress import CountingLog
from eventlog.cli.render import cell, plural, verdict
from eventlog.cli.scope import require_tenant
from eventlog.digest import LogDigest, check_digest
from eventlog.log import EventLog, SpilledViews
from eventlog.records import RecordedEvent, StreamProblem, VerifyReport
from eventlog.transfer import count_events
from projections.runner import ViewDifference, compare_views


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``verify``."""
    parser = add_command(
        commands, common, "verify", "check every hash chain and every view against the log",
        run,
        description="Recompute every stream's SHA-256 hash chain from the stored bytes "
        "(naming the first broken link of each stream) and compare every stored view row "
        "with a rebuild from the log (naming each differing row). Exit status 1 on any "
        "finding.",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's chains and rows")
    parser.add_argument("--max-rows", type=positive_int, default=20, metavar="N",
                        help="show at most N differing view rows (20); all are counted")
    parser.add_argument("--digest", metavar="FILE",
                        help="also prove the log still holds every stream up to the heads "
                             "of a digest written earlier by `eventlog digest`")


async def run(context: Context) -> int:
    """Verify, print the findings, and exit 1 if there are any."""
    tenant: str | None = context.args.tenant
    digest = read_digest_file(context.args.digest) if context.args.digest else None
    async with context.open() as log:
        if tenant is not None:
            await require_tenant(log, tenant)
        await settle_or_warn(context, log)
        with context.progress() as progress:
            chains = progress.add_task("checking hash chains", total=None)
            report = await log.verify(tenant)
            if digest is not None:
                report = await _with_digest(log, report, digest, tenant)
            progress.update(chains, visible=False)
            undecodable: list[RecordedEvent] = []
            differences = await view_findings(log, tenant, progress, undecodable)
    if context.json:
        context.print_json(_as_json(report, differences, undecodable))
    else:
        _print(context, report, differences, undecodable)
    return EXIT_OK if report.ok and not differences and not undecodable else EXIT_FINDINGS


async def _with_digest(
    log: EventLog, report: VerifyReport, digest: LogDigest, tenant: str | None
) -> VerifyReport:
    """``report`` with the streams the digest proves were cut, dropped or rewritten."""
    if tenant is not None:
        heads = tuple(head for head in digest.streams if head.tenant_id == tenant)
        digest = LogDigest(taken_at=digest.taken_at, tenant_id=tenant, streams=heads)
    found = await check_digest(log, digest)
    problems = sorted([*report.problems, *found],
                      key=lambda problem: (problem.tenant_id, problem.stream_id))
    return VerifyReport(streams=report.streams, events=report.events, problems=problems)


async def view_findings(
    log: EventLog, tenant: str | None, progress: Progress,
    undecodable: list[RecordedEvent] | None = None,
) -> list[ViewDifference]:
    """The view rows that differ from a rebuild, in two passes when the first finds any.

    A write committing while the log is read can make its rows differ for a moment (the
    rebuild read the log before it, the stored views are read after). Only rows that
    differ again once every transaction running after the first pass has ended are
    findings: a changed or corrupted row differs every time. Events of the scope that do
    not decode as their type are appended to ``undecodable`` (when given) as the log is
    read.
    """
    first = await _compare(log, tenant, progress, undecodable)
    if not first:
        return first
    await settle(log)
    suspects = {(difference.table, difference.key) for difference in first}
    return [d for d in await _compare(log, tenant, progress) if (d.table, d.key) in suspects]


async def _compare(
    log: EventLog, tenant: str | None, progress: Progress,
    undecodable: list[RecordedEvent] | None = None,
) -> list[ViewDifference]:
    task = progress.add_task("rebuilding views from the log", total=await count_events(log))

    def seen(events: list[RecordedEvent]) -> None:
        if undecodable is not None:
            undecodable.extend(event for event in events if isinstance(
                event.event, UndecodableEvent) and tenant in (None, event.tenant_id)
                and all(event.position != e.position for e in undecodable))

    counting = CountingLog(log, lambda n: progress.advance(task, n), seen)
    differences = await compare_views(counting.as_log(), spill=SpilledViews)
    progress.update(task, visible=False)
    return [d for d in differences if tenant is None or (d.key and d.key[0] == tenant)]


def changed_columns(difference: ViewDifference) -> list[str]:
    """The columns whose stored value differs from the rebuilt one (all when a row is
    missing on one side)."""
    stored, rebuilt = difference.stored or {}, difference.rebuilt or {}
    names = list(dict.fromkeys([*rebuilt, *stored]))
    return [name for name in names if stored.get(name) != rebuilt.get(name)]


def describe(difference: ViewDifference) -> str:
    """One line saying how a stored view row differs from the rebuilt one."""
    if difference.stored is None:
        return "missing from the stored view (the log says it should exist)"
    if difference.rebuilt is None:
        return "in the stored view but not in a rebuild from the log"
    parts = [
        f"{name}: stored {cell(difference.stored.get(name), 24)}, "
        f"log says {cell(difference.rebuilt.get(name), 24)}"
        for name in changed_columns(difference)
    ]
    return "; ".join(parts)


def undecodable_json(event: RecordedEvent) -> dict[str, Any]:
    """An event whose stored bytes do not decode as its type, for scripts."""
    error = event.event.error if isinstance(event.event, UndecodableEvent) else ""
    return {"tenant_id": event.tenant_id, "stream_id": event.stream_id,
            "version": event.version, "position": event.position, "type": event.type,
            "error": error}


def _as_json(
    report: VerifyReport, differences: list[ViewDifference], undecodable: list[RecordedEvent]
) -> dict[str, Any]:
    return {
        "ok": report.ok and not differences and not undecodable,
        "streams": report.streams,
        "events": report.events,
        "chain_problems": [_problem_json(problem) for problem in report.problems],
        "view_differences": [
            {"table": d.table, "key": list(d.key), "columns": changed_columns(d),
             "stored": d.stored, "rebuilt": d.rebuilt}
            for d in differences
        ],
        "undecodable_events": [undecodable_json(event) for event in undecodable],
    }


def _problem_json(problem: StreamProblem) -> dict[str, Any]:
    return {"tenant_id": problem.tenant_id, "stream_id": problem.stream_id,
            "version": problem.version, "kind": problem.kind, "detail": problem.detail}


def _print(
    context: Context, report: VerifyReport, differences: list[ViewDifference],
    undecodable: list[RecordedEvent],
) -> None:
    out = context.out
    out.print(verdict(f"Hash chains: {plural(report.streams, 'stream')}, "
                      f"{plural(report.events, 'event')}",
                      report.ok, f"{len(report.problems)} broken"))
    if report.problems:
        table = Table("tenant", "stream", "version", "problem", "detail",
                      title="First broken link of each stream", title_justify="left")
        for problem in report.problems:
            table.add_row(problem.tenant_id, problem.stream_id, str(problem.version),
                          problem.kind, problem.detail)
        out.print(table)
    out.print(verdict("Every event decodes as its type", not undecodable,
                      plural(len(undecodable), "does not", "do not")))
    if undecodable:
        table = Table("#", "tenant", "stream", "version", "type", "error",
                      title="Events that do not decode", title_justify="left")
        for event in undecodable:
            found = undecodable_json(event)
            table.add_row(str(event.position), event.tenant_id, event.stream_id,
                          str(event.version), event.type, found["error"])
        out.print(table)
    out.print(verdict("Views against a rebuild from the log", not differences,
                      plural(len(differences), "row differs", "rows differ")))
    if differences:
        shown = differences[: context.args.max_rows]
        table = Table("table", "key", "difference", title="Differing view rows",
                      title_justify="left")
        for difference in shown:
            key = ", ".join(cell(part, 40) for part in difference.key)
            table.add_row(difference.table, key, describe(difference))
        out.print(table)
        if len(differences) > len(shown):
            out.print(f"… and {len(differences) - len(shown)} more (--max-rows)")
