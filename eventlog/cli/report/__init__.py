"""``eventlog report``: the incident report as one self-contained HTML file.

`collect` reads (public read side only), `model` turns a session's events into lanes,
marks, links, a checkpoint tree and table rows, `svg` draws the lanes and `page` writes
the document; all but `collect` are pure functions tested without a browser.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, CommandError
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.options import Moment
from eventlog.cli.parsers.report import DEFAULT_SESSIONS
from eventlog.cli.report import collect
from eventlog.cli.report.index import index_lines
from eventlog.cli.report.model import SessionReport
from eventlog.cli.report.page import ReportData, VerifySummary, render_page
from eventlog.cli.scope import require_session, require_tenant
from eventlog.log import EventLog

__all__ = ["Written", "register", "write_report"]


@dataclass(frozen=True)
class Written:
    """What `write_report` wrote."""

    path: str
    bytes: int
    ok: bool
    sessions: int


async def run(context: Context) -> int:
    """Collect, render, write, and say where."""
    args = context.args
    async with context.open() as log:
        written = await write_report(
            context, log, args.tenant, args.session, as_of=args.as_of, output=args.output,
            max_sessions=args.max_sessions)
    if context.json:
        context.print_json({"path": written.path, "bytes": written.bytes,
                            "verify_ok": written.ok, "sessions": written.sessions})
    elif written.path != "-":
        context.out.print(Text.assemble(
            ("report written: ", "bold"), written.path,
            f" ({written.bytes / 1024:.0f} KiB; open it in a browser)"))
    return EXIT_OK if written.ok else EXIT_FINDINGS


async def write_report(
    context: Context, log: EventLog, tenant: str | None, session: str | None, *,
    as_of: Moment | None = None, output: str | None = None,
    max_sessions: int = DEFAULT_SESSIONS,
) -> Written:
    """Read the scope, verify, render the page and write it; what was written."""
    page = await build_page(context, log, tenant, session, as_of, max_sessions)
    data = page.html.encode("utf-8")
    path = _write(output or default_name(tenant, session), data)
    return Written(path, len(data), page.ok, page.sessions)


def _write(target: str, data: bytes) -> str:
    """Write the page (``-``: to standard output); the absolute path written."""
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return "-"
    path = Path(target)
    try:
        path.write_bytes(data)
    except OSError as error:
        raise CommandError(f"cannot write the report to {target}: {error.strerror}") from error
    return str(path.resolve())


@dataclass(frozen=True)
class _Page:
    html: str
    ok: bool
    sessions: int


async def build_page(
    context: Context, log: EventLog, tenant: str | None, session: str | None,
    as_of_moment: Moment | None, max_sessions: int,
) -> _Page:
    """The page's HTML for the scope."""
    as_of = as_of_moment.value if as_of_moment is not None else None
    scan, verify = await _read(context, log, tenant, session, as_of)
    keys = collect.latest_sessions(scan, max_sessions)
    drawn = await collect.draw(log, scan, keys, verify, as_of)
    reports = drawn.reports
    data = ReportData(
        title=report_title(tenant, session, reports), source=context.shown_url(),
        generated_at=datetime.now(UTC), verify=verify, sessions=reports,
        index=index_lines(scan.tallies, {(r.tenant, r.session): asked(r) for r in reports},
                          collect.findings_by_subject(scan, verify))
        if session is None else [],
        as_of=collect.moment_text(as_of_moment, scan.last), left_after=scan.after_moment,
        states=drawn.states, values=drawn.values,
    )
    return _Page(render_page(data), verify.ok, len(reports))


async def _read(
    context: Context, log: EventLog, tenant: str | None, session: str | None,
    as_of: int | datetime | None,
) -> tuple[collect.Scan, VerifySummary]:
    """The scope's events (cut at ``as_of``) and the verify result; unknown names refused."""
    if session is not None:
        if tenant is None:
            raise CommandError("SESSION needs TENANT (session ids are per tenant)")
        streams = await require_session(log, tenant, session)
    elif tenant is not None:
        await require_tenant(log, tenant)
    await settle_or_warn(context, log)
    with context.progress() as progress:
        if session is not None and tenant is not None:
            scan = await collect.one_session(log, tenant, session, streams, as_of)
        else:
            scan = await collect.scan_sessions(log, tenant, as_of)
        return scan, await collect.verify_summary(log, tenant, progress)


def asked(report: SessionReport) -> int:
    """How many questions a drawn subject asked: interrupt batches and its threads'."""
    return (len([lane for lane in report.lanes if lane.kind == "batch"])
            + sum(len(story.questions) for story in report.stories))


def report_title(tenant: str | None, session: str | None, reports: list[SessionReport]
                 ) -> str:
    """The report's title for its scope."""
    if session is not None:
        kind = reports[0].framework if reports else "session"
        return f"Incident report: {kind} {session} of tenant {tenant}"
    if tenant is not None:
        return f"Incident report: tenant {tenant}"
    return "Incident report: the whole log"


def default_name(tenant: str | None, session: str | None) -> str:
    """``eventlog-report-<tenant>-<session>.html`` with unsafe characters replaced."""
    scope = "-".join(part for part in (tenant, session) if part) or "log"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in scope)[:120]
    return f"eventlog-report-{safe}.html"
