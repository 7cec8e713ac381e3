"""The console as an ASGI application (Starlette), read-only and tenant-scoped.

Every route but the login asks for a token (`Authorization: Bearer TOKEN`, or the session
cookie a browser was given for one) and answers 401 without it. Every tenant-scoped route
answers a tenant the token does not see, and a session, thread, batch or event the tenant
does not hold, with the same 404 (`NOT_FOUND`, byte for byte): another tenant's data is
indistinguishable from absent data. There is no route that writes: the only POST exchanges a
token for a session cookie, and the log is only ever read.

Pages are Jinja2 templates with autoescaping on; the report's parts (`session_section`)
come already escaped by the report's renderer, which reads stored values only through the
report's safe readers (no pickle, no code). A strict Content-Security-Policy allows only
the package's own script and style sheet.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from eventlog.cli.errors import CommandError
from eventlog.cli.render import when
from eventlog.cli.report import collect
from eventlog.cli.report.assets import CSS as REPORT_CSS
from eventlog.cli.report.assets import SCRIPT as REPORT_SCRIPT
from eventlog.cli.report.page import VerifySummary, event_data, session_section
from eventlog.cli.scope import session_streams
from eventlog.cli.serve.access import SESSION_TTL_S, Access, Grant
from eventlog.cli.serve.find import FRAMEWORKS, KINDS, STATES, Failing, Filters, find
from eventlog.cli.story import build_timeline
from eventlog.cli.thread_report import checkpoint_view
from eventlog.cli.thread_story import ThreadStory
from eventlog.cli.transparency import inclusion_proof, same_tree
from eventlog.errors import InvalidInput
from eventlog.events.interrupts import BatchCreated, batch_stream
from eventlog.log import EventLog
from eventlog.records import VerifyReport
from eventlog.validation import check_id
from projections.interrupts import BATCHES
from projections.query import ViewQuery

COOKIE = "eventlog_console"
NOT_FOUND = b"not found\n"
"""The body of every 404: a missing id and another tenant's are the same bytes."""
UNAUTHORIZED = b"a token is needed: Authorization: Bearer TOKEN, or log in at /login\n"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
POLL_S = 1.0
"""The longest a live feed waits before it reads again (appends of this process and
PostgreSQL's notifications wake it at once)."""
KEEPALIVE_S = 15.0
"""How often a live feed says it is still there when nothing happened."""

Opener = Callable[[], AbstractAsyncContextManager[EventLog]]


class _Headers:
    """Sets the security headers on every response (errors and streams included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(
                    (name.encode(), value.encode()) for name, value in HEADERS.items()
                    if name.encode() not in names)]
            await send(message)

        await self.app(scope, receive, sending)


def _not_found() -> Response:
    return Response(NOT_FOUND, 404, media_type="text/plain; charset=utf-8")


class Console:
    """The routes over one open log."""

    def __init__(self, access: Access, heads: Mapping[str, Any], source: str) -> None:
        self.access = access
        self.heads = dict(heads)
        self.source = source
        self.log: EventLog | None = None
        self.verifies: dict[str, VerifyRun] = {}
        self.pages = Environment(
            loader=PackageLoader("eventlog.cli.serve", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )
        self.pages.filters["when"] = when

    # -- who asks ----------------------------------------------------------------------

    def grant(self, request: Request) -> Grant:
        """The grant the request carries; 401 without one."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        found = None
        if scheme.lower() == "bearer" and token:
            found = self.access.by_token(token.strip())
        elif COOKIE in request.cookies:
            found = self.access.by_session(request.cookies[COOKIE])
        if found is None:
            raise HTTPException(401)
        return found

    def tenant(self, request: Request) -> tuple[Grant, str]:
        """The grant and the path's tenant; the 404 of absent data for a tenant the
        grant does not see."""
        grant = self.grant(request)
        tenant = request.path_params["tenant"]
        if not grant.sees(tenant):
            raise HTTPException(404)
        check_id("tenant_id", tenant)  # InvalidInput: absent, as a missing tenant is
        return grant, tenant

    @property
    def opened(self) -> EventLog:
        assert self.log is not None, "the console's log is opened by its lifespan"
        return self.log

    def page(self, template: str, status: int = 200, **values: Any) -> Response:
        html = self.pages.get_template(template).render(**values)
        return Response(html, status, media_type="text/html; charset=utf-8")

    # -- routes ------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        """The login page; ``?token=`` (the URL printed at start) exchanges it at once."""
        token = request.query_params.get("token")
        if token is not None:
            return self._exchange(token)
        return self.page("login.html")

    async def login(self, request: Request) -> Response:
        """Exchange a token (form field ``token``) for a session cookie."""
        body = b""
        async for chunk in request.stream():  # a form of one field: read at most 4 KiB
            body += chunk
            if len(body) > _MAX_FORM:
                return PlainTextResponse("the login form is one token\n", 413)
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
        return self._exchange((fields.get("token") or [""])[0])

    def _exchange(self, token: str) -> Response:
        grant = self.access.by_token(token)
        if grant is None:
            return self.page("login.html", 401, failed=True)
        response = RedirectResponse("/", 303)
        response.set_cookie(COOKIE, self.access.open_session(grant), httponly=True,
                            samesite="strict", path="/", max_age=SESSION_TTL_S)
        return response

    async def home(self, request: Request) -> Response:
        """The tenants the token sees (every one: a form to name one)."""
        grant = self.grant(request)
        tenant = request.query_params.get("tenant")
        if tenant:
            return RedirectResponse(f"/t/{_quote(tenant)}", 303)
        tenants = sorted(grant.tenants) if grant.tenants is not None else None
        return self.page("home.html", grant=grant, tenants=tenants, source=self.source)

    async def listing(self, request: Request) -> Response:
        """Find: the tenant's subjects, newest first, filtered, cursor-paged."""
        _grant, tenant = self.tenant(request)
        query = request.query_params
        try:
            filters = _filters(query)
            after = _cursor(query.get("after"))
        except ValueError as error:
            return PlainTextResponse(f"{error}\n", 400)
        found = await find(self.opened, tenant, filters, after, self._failing(tenant))
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({
                "tenant": tenant, "cursor": found.cursor, "examined": found.examined,
                "note": found.note,
                "items": [{"kind": i.kind, "id": i.ident, "position": i.position,
                           "updated_at": i.updated_at.isoformat(), "events": i.events,
                           "framework": i.framework, "actor": i.actor, "thread": i.thread,
                           "state": i.state} for i in found.items]})
        kept = {k: v for k, v in query.items() if k != "after" and v}
        following = (f"/t/{_quote(tenant)}?{urlencode({**kept, 'after': found.cursor})}"
                     if found.cursor is not None else None)
        return self.page("list.html", tenant=tenant, found=found, filters=filters,
                         query=kept, following=following, kinds=sorted(set(KINDS.values())),
                         frameworks=list(FRAMEWORKS), states=STATES, source=self.source)

    def _failing(self, tenant: str) -> Failing:
        """What the tenant's last finished verify found, stream by stream."""
        run = self.verifies.get(tenant)
        if run is None or not run.task.done() or run.task.cancelled() or (
                run.task.exception() is not None):
            return Failing(None)
        streams: dict[str, list[str]] = {}
        for problem in run.task.result().problems:
            streams.setdefault(problem.stream_id, []).append(
                f"{problem.kind} at version {problem.version}: {problem.detail}"[:300])
        return Failing(streams)

    async def subject(self, request: Request) -> Response:
        """Look: a session's or thread's page, drawn from the report's model of it."""
        _grant, tenant = self.tenant(request)
        session = request.path_params["session"]
        log = self.opened
        try:
            as_of = _cursor(request.query_params.get("as_of"))
        except ValueError:
            return PlainTextResponse("as_of must be a log position (a whole number)\n", 400)
        streams = await _streams(log, tenant, session)
        if not streams:
            return _not_found()
        scan = await collect.one_session(log, tenant, session, streams, as_of)
        drawn = await collect.draw(log, scan, [(tenant, session)], _UNVERIFIED, as_of,
                                   past_states=False)
        report = drawn.reports[0]
        checkpoint = None
        chosen = request.query_params.get("checkpoint")
        if chosen:
            checkpoint = _checkpoint(report.stories, chosen)
            if checkpoint is None:
                return _not_found()
        section = session_section(report, drawn.states.get(session, []), drawn.values)
        last = scan.last.position if scan.last is not None else 0
        return self.page(
            "subject.html", tenant=tenant, session=session, report=report,
            section=Markup(section),  # escaped by the report's renderer
            data=Markup(event_data(drawn.reports)),  # JSON made safe inside <script>
            last=last, proofs=tenant in self.heads, source=self.source, as_of=as_of,
            later=scan.after_moment, checkpoint=checkpoint)

    async def batch(self, request: Request) -> Response:
        """Look: an interrupt batch, its state (the view's row) and each of its events in
        words (claims and their generations, effects, captures, reconciliation), each with
        its proof when the console proves."""
        _grant, tenant = self.tenant(request)
        batch_id = request.path_params["batch"]
        log = self.opened
        events = [event async for event in log.read_stream(tenant, batch_stream(batch_id),
                                                            limit=_BATCH_EVENTS)]
        if not events:
            return _not_found()
        rows = await log.query(ViewQuery(BATCHES, {"tenant_id": tenant, "batch_id": batch_id},
                                         limit=1))
        created = events[0].event
        thread = created.thread_id if isinstance(created, BatchCreated) else ""
        return self.page("batch.html", tenant=tenant, batch=batch_id, thread=thread,
                         row=rows[0] if rows else None, source=self.source,
                         entries=build_timeline(events).entries, proofs=tenant in self.heads)

    async def report(self, request: Request) -> Response:
        """The CLI's incident report of the session, as ``eventlog report TENANT SESSION``
        writes it (one self-contained file, downloaded): the same model, with the tenant's
        verify run for it."""
        from rich.progress import Progress

        from eventlog.cli.report import default_name, report_title
        from eventlog.cli.report.page import ReportData, render_page

        _grant, tenant = self.tenant(request)
        session = request.path_params["session"]
        log = self.opened
        streams = await _streams(log, tenant, session)
        if not streams:
            return _not_found()
        scan = await collect.one_session(log, tenant, session, streams, None)
        verify = await collect.verify_summary(log, tenant, Progress(disable=True))
        drawn = await collect.draw(log, scan, [(tenant, session)], verify, None)
        html = render_page(ReportData(
            title=report_title(tenant, session, drawn.reports), source=self.source,
            generated_at=datetime.now(UTC), verify=verify, sessions=drawn.reports,
            states=drawn.states, values=drawn.values))
        name = default_name(tenant, session)
        return Response(html, media_type="text/html; charset=utf-8",
                        headers={"content-disposition": f'attachment; filename="{name}"'})

    async def live(self, request: Request) -> Response:
        """Follow: server-sent events as the session's streams grow (the log's watch:
        woken at once by this process's appends and PostgreSQL's notifications)."""
        _grant, tenant = self.tenant(request)
        session = request.path_params["session"]
        log = self.opened
        streams = await _streams(log, tenant, session)
        if not streams:
            return _not_found()
        return StreamingResponse(self._feed(request, log, tenant, session, streams),
                                 media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    async def _feed(self, request: Request, log: EventLog, tenant: str, session: str,
                    streams: list[str]) -> AsyncIterator[str]:
        versions = {s: (await log.stream_head(tenant, s) or (0, b""))[0] for s in streams}
        yield "retry: 2000\n\n"
        said = time.monotonic()
        async with log.watch() as watch:
            while not await request.is_disconnected():
                watch.clear()
                for stream in await _streams(log, tenant, session):
                    start = versions.get(stream, 0) + 1
                    async for event in log.read_stream(tenant, stream, start, limit=500):
                        versions[stream] = event.version
                        data = json.dumps({"position": event.position, "type": event.type,
                                           "stream": event.stream_id})
                        yield f"event: appended\ndata: {data}\n\n"
                        said = time.monotonic()
                if time.monotonic() - said >= KEEPALIVE_S:
                    yield ": still here\n\n"
                    said = time.monotonic()
                await watch.wait(POLL_S)

    async def proof(self, request: Request) -> Response:
        """Prove: an event's inclusion proof under the tenant's signed head, as a file
        `eventlog check-proof` checks with no database."""
        _grant, tenant = self.tenant(request)
        try:
            event_id = uuid.UUID(request.path_params["event"])
        except ValueError:
            return _not_found()
        log = self.opened
        if await log.find_event(tenant, event_id) is None:
            return _not_found()
        head = self.heads.get(tenant)
        if head is None:
            return PlainTextResponse(
                "this console was given no signed head of this tenant: start it with "
                "--head FILE (`eventlog tree-head` writes one)\n", 409)
        try:
            await same_tree(log, head)
            document = await inclusion_proof(log, tenant, event_id, head)
        except CommandError as error:
            return PlainTextResponse(f"{error}\n", 409)
        body = (json.dumps(document, indent=2) + "\n").encode()
        return Response(body, media_type="application/json", headers={
            "content-disposition": f'attachment; filename="proof-{event_id}.json"'})

    async def verify(self, request: Request) -> Response:
        """Prove: the tenant's verify, run on request in the background (one at a time per
        tenant; other requests go on being answered), its status, and the signed head the
        console proves under."""
        _grant, tenant = self.tenant(request)
        log = self.opened
        run = self.verifies.get(tenant)
        if request.query_params.get("run") and (run is None or run.task.done()):
            run = VerifyRun(time.monotonic(), datetime.now(UTC),
                            asyncio.create_task(log.verify(tenant)))
            self.verifies[tenant] = run
        head = self.heads.get(tenant)
        tree = await log.tree_head(tenant) if head is not None else None
        report = error = None
        if run is not None and run.task.done():
            if run.task.cancelled():
                error = "cancelled"
            elif run.task.exception() is not None:
                error = f"{type(run.task.exception()).__name__}: {run.task.exception()}"
            else:
                report = run.task.result()
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({
                "tenant": tenant, "running": run is not None and not run.task.done(),
                "ok": report.ok if report is not None else None, "error": error,
                "streams": report.streams if report else None,
                "events": report.events if report else None,
                "problems": [{"stream": p.stream_id, "version": p.version, "kind": p.kind,
                              "detail": p.detail} for p in report.problems] if report else []})
        return self.page("verify.html", tenant=tenant, run=run, report=report, error=error,
                         elapsed=time.monotonic() - run.monotonic if run else 0.0,
                         head=head, tree=tree, source=self.source)

    async def asset(self, request: Request) -> Response:
        """The package's own style sheets and script (no CDN: air-gapped hosts work)."""
        name = request.path_params["name"]
        if name == "report.css":
            return Response(REPORT_CSS, media_type="text/css")
        if name == "report.js":
            return Response(REPORT_SCRIPT, media_type="text/javascript")
        if name not in _ASSETS:
            return _not_found()
        text = resources.files("eventlog.cli.serve").joinpath("static", name).read_text(
            encoding="utf-8")
        return Response(text, media_type=_ASSETS[name])


@dataclass
class VerifyRun:
    """One tenant's verify, running or done."""

    monotonic: float
    started: datetime
    task: asyncio.Task[VerifyReport]


_MAX_FORM = 4096
_BATCH_EVENTS = 10_000
"""The most events a batch page shows (a batch's claims are bounded by its capacity)."""
_ASSETS = {"console.css": "text/css", "console.js": "text/javascript"}
_UNVERIFIED = VerifySummary(streams=0, events=0, problems=[], view_differences=[],
                            scope="not run by the page")


CHECKPOINT_SHOWN = 200_000
"""The most characters of one checkpoint's values a page shows (a 5 MB value is cut)."""
CHANGES_SHOWN = 2_000
"""The most lines of a checkpoint's difference from its parent a page shows."""


def _checkpoint(stories: Sequence[ThreadStory], checkpoint_id: str) -> dict[str, Any] | None:
    """One checkpoint of a framework thread as `eventlog inspect --checkpoint` tells it
    (its step, nodes, values and difference from its parent), cut to what a page holds;
    None when no thread of the page has it."""
    for story in stories:
        step = next((s for s in reversed(story.steps) if s.checkpoint_id == checkpoint_id),
                    None)
        if step is None:
            continue
        values, changes = checkpoint_view(story, step)
        return {"id": step.checkpoint_id, "namespace": step.namespace, "step": step.step,
                "source": step.source, "nodes": step.nodes, "next": step.next,
                "parent": step.parent_id, "position": step.position,
                "values": values[:CHECKPOINT_SHOWN],
                "cut": max(0, len(values) - CHECKPOINT_SHOWN),
                "changes": changes[:CHANGES_SHOWN],
                "more_changes": max(0, len(changes) - CHANGES_SHOWN)}
    return None


async def _streams(log: EventLog, tenant: str, session: str) -> list[str]:
    try:
        return await session_streams(log, tenant, session)
    except InvalidInput:  # an id no stream can have: absent
        return []


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _filters(query: Mapping[str, str]) -> Filters:
    kind, framework, state = query.get("kind", ""), query.get("framework", ""), query.get(
        "state", "")
    if kind and kind not in KINDS.values():
        raise ValueError(f"kind must be one of {', '.join(sorted(set(KINDS.values())))}")
    if framework and framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}")
    if state and state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}")
    return Filters(prefix=query.get("q", ""), kind=kind, actor=query.get("actor", ""),
                   framework=framework, state=state, since=_time(query, "since"),
                   until=_time(query, "until"))


def _time(query: Mapping[str, str], name: str) -> datetime | None:
    text = query.get(name, "")
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name} must be an ISO 8601 time, such as 2026-12-06T14:00, "
                         f"not {text[:40]!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _cursor(text: str | None) -> int | None:
    if not text:
        return None
    if not text.isdigit() or len(text) > 19:
        raise ValueError("after must be a cursor the previous page gave")
    return int(text)


def build_app(open_log: Opener, access: Access, heads: Mapping[str, Any] | None = None,
              source: str = "", *, hosts: Sequence[str] | None = None) -> Starlette:
    """The console over the log ``open_log`` opens (when the application starts),
    for the tokens of ``access``; ``heads`` (tenant → signed head) are what proofs are
    made under; ``hosts``, when given, the only ``Host`` headers answered (a console on
    the loopback interface answers no other name: a page of another site whose name
    was made to point here, DNS rebinding, gets 400)."""
    console = Console(access, heads or {}, source)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with open_log() as log:
            console.log = log
            try:
                yield
            finally:
                for run in console.verifies.values():
                    run.task.cancel()
                console.log = None

    async def errors(request: Request, error: Exception) -> Response:
        status = getattr(error, "status_code", 500)
        if status == 401:
            if "text/html" in request.headers.get("accept", ""):
                return console.page("login.html", 401)
            return Response(UNAUTHORIZED, 401, media_type="text/plain; charset=utf-8",
                            headers={"www-authenticate": "Bearer"})
        if status == 404:
            return _not_found()
        return PlainTextResponse(f"{getattr(error, 'detail', 'error')}\n", status)

    routes = [
        Route("/", console.home),
        Route("/login", console.login_form, methods=["GET"]),
        Route("/login", console.login, methods=["POST"]),
        Route("/static/{name}", console.asset),
        Route("/t/{tenant}", console.listing),
        Route("/t/{tenant}/live/{session:path}", console.live),
        Route("/t/{tenant}/e/{event}/proof", console.proof),
        Route("/t/{tenant}/verify", console.verify),
        Route("/t/{tenant}/report/{session:path}", console.report),
        Route("/t/{tenant}/s/{session:path}", console.subject),
        Route("/t/{tenant}/b/{batch}", console.batch),
    ]
    async def invalid(_request: Request, _error: Exception) -> Response:
        return _not_found()  # an id no stream can have (too long, a control character)

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: errors, InvalidInput: invalid})
    if hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))
    app.add_middleware(_Headers)
    return app

