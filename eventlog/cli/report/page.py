"""The whole report page: one self-contained HTML document, from values alone.

Everything the page needs is inside it — the stylesheet, the SVG, the events behind the
clicks (as JSON in a ``<script type="application/json">``) and a few lines of script —
so it opens from a USB stick in an air-gapped room. Every text from the log is escaped,
as HTML and for its control characters (`render.safe`: no ESC, C1 control or bidi
override reaches the page, nor a terminal that shows the file);
token material never reaches here (`eventlog.cli.render.event_json` masks it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from eventlog.adapters import DEFAULT_TENANT
from eventlog.cli.render import jsonable, plural, safe, safe_data, when
from eventlog.cli.report.assets import CSS, SCRIPT
from eventlog.cli.report.index import SessionLine, anchor, render_index
from eventlog.cli.report.model import SessionReport
from eventlog.cli.report.parts import Row, TreeRow
from eventlog.cli.report.svg import mark_shape, stop_shape, swimlanes
from eventlog.cli.report.values import StateView
from eventlog.cli.thread_story import AGENT_FRAMEWORK, ThreadStory, pretty
from eventlog.records import StreamProblem


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A stored event that does not decode as its type (a verify finding)."""

    tenant_id: str
    stream_id: str
    version: int
    position: int
    type: str
    error: str


@dataclass
class VerifySummary:
    """What verify found: chains, views and undecodable events."""

    streams: int
    events: int
    problems: list[StreamProblem]
    view_differences: list[str]
    undecodable: list[Undecodable] = field(default_factory=list)
    scope: str = "the whole log"

    @property
    def ok(self) -> bool:
        """True when nothing at all was found."""
        return not (self.problems or self.view_differences or self.undecodable)


@dataclass
class ReportData:
    """Everything one page shows."""

    title: str
    source: str
    generated_at: datetime
    verify: VerifySummary
    sessions: list[SessionReport]
    index: list[SessionLine] = field(default_factory=list)
    as_of: str | None = None
    """What the page is "as of" (None: now)."""
    left_after: int = 0
    """Events recorded after the as-of moment, not shown."""
    states: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Per session: the views' state (as of the moment) as label/value pairs."""
    values: dict[int, StateView] = field(default_factory=dict)
    """By position: a listed checkpoint's state and its difference from its parent's."""


def render_page(report: ReportData) -> str:
    """The report as one HTML document."""
    body = [
        _header(report),
        _as_of(report),
        '<main>',
        verify_section(report.verify, report.sessions),
        render_index(report.index) if report.index else "",
        *(session_section(s, report.states.get(s.session, []), report.values)
          for s in report.sessions),
        "</main>",
        _detail_panel(),
        f'<script type="application/json" id="event-data">{event_data(report.sessions)}'
        "</script>",
        f"<script>{SCRIPT}</script>",
    ]
    return safe(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>"
        + "".join(body) + "</body></html>\n"
    )


def event_data(sessions: Sequence[SessionReport]) -> str:
    """The listed events in full, by position, as JSON safe inside a ``<script>``; each
    opens with what it means (``told``: the table's what and details, in full)."""
    data: dict[str, Any] = {str(row.position): {"told": f"{row.what}: {row.details}",
                                                **row.full}
                            for s in sessions for row in s.rows}
    text = json.dumps(safe_data(jsonable(data)), ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _header(report: ReportData) -> str:
    return (
        f'<header class="top"><h1>{escape(report.title)}</h1><div class="sub">'
        f"log {escape(report.source)} · written {escape(when(report.generated_at))} by "
        "<code>eventlog report</code> (this machine's clock)</div>"
        f'<div class="sub" id="clocks">{escape(clock_note(report))}</div></header>'
    )


def clock_note(report: ReportData) -> str:
    """Which clock the events' times are read from, and whether it runs ahead."""
    note = ("Event times are each event's recorded time, read from the clock of the "
            "process that wrote it (its system clock, or the clock its application "
            "gave open_log), not from this machine's.")
    latest = max((s.last_recorded for s in report.sessions if s.last_recorded is not None),
                 default=None)
    if latest is not None and latest > report.generated_at:
        note += (f" Here they run ahead of it (the latest is {when(latest)}): the writer's "
                 "clock was simulated or set ahead; order by position, not by time.")
    return note


def _as_of(report: ReportData) -> str:
    if report.as_of is None:
        return ""
    later = (f"; {plural(report.left_after, 'later event')} not shown"
             if report.left_after else "")
    return (f'<div class="asof" id="as-of">As of {escape(report.as_of)}: the log as it stood '
            f"then{later}. The verify result below is of the log as it is now.</div>")


def verify_section(verify: VerifySummary, sessions: Sequence[SessionReport]) -> str:
    """The verify badge, its counts and every finding (the first broken link first)."""
    badge = ('<span class="badge ok" id="verify-badge" data-ok="true">verified: every chain '
             "intact, every view matches the log</span>" if verify.ok else
             '<span class="badge bad" id="verify-badge" data-ok="false">verify found '
             f"{plural(_findings(verify), 'problem')}</span>")
    return "".join([
        f'<section class="card" id="verify"><h2>Verify {badge}</h2>',
        f'<div class="facts"><span>checked <b>{escape(verify.scope)}</b></span>'
        f"<span><b>{verify.streams}</b> streams</span><span><b>{verify.events}</b> "
        "events hash-chained</span></div>",
        _chain_findings(verify, sessions), _view_findings(verify.view_differences),
        "</section>",
    ])


def _chain_findings(verify: VerifySummary, sessions: Sequence[SessionReport]) -> str:
    if not (verify.problems or verify.undecodable):
        return ""
    where = {(s.tenant, row.full.get("stream_id"), row.full.get("version")): row.position
             for s in sessions for row in s.rows}
    parts = ["<h3>Hash chains: first broken link of each stream</h3><table><tr><th>tenant"
             "</th><th>stream</th><th class=num>version</th><th>problem</th><th>detail</th>"
             "</tr>"]
    for problem in verify.problems:
        position = where.get((problem.tenant_id, problem.stream_id, problem.version))
        parts.append(_problem_row(problem.tenant_id, problem.stream_id, problem.version,
                                  problem.kind, problem.detail, position))
    for bad in verify.undecodable:
        parts.append(_problem_row(bad.tenant_id, bad.stream_id, bad.version,
                                  "undecodable", f"{bad.type}: {bad.error}", bad.position))
    parts.append("</table>")
    return "".join(parts)


def _view_findings(differences: list[str]) -> str:
    if not differences:
        return ""
    parts = ["<h3>View rows that differ from a rebuild from the log</h3><ul>"]
    parts.extend(f"<li>{escape(line)}</li>" for line in differences[:50])
    if len(differences) > 50:
        parts.append(f"<li>… and {len(differences) - 50} more "
                     "(<code>eventlog verify</code> lists them)</li>")
    parts.append("</ul>")
    return "".join(parts)


def _findings(verify: VerifySummary) -> int:
    return len(verify.problems) + len(verify.view_differences) + len(verify.undecodable)


def _problem_row(
    tenant: str, stream: str, version: int, kind: str, detail: str, position: int | None
) -> str:
    link = (f' <a href="#ev-{position}" data-pos="{position}">#{position}</a>'
            if position is not None else "")
    return (f'<tr class="problem"><td>{escape(tenant)}</td><td class=mono>{escape(stream)}'
            f"</td><td class=num>{version}{link}</td><td><b>{escape(kind)}</b></td>"
            f"<td>{escape(detail)}</td></tr>")


def session_section(
    report: SessionReport, state: list[tuple[str, str]],
    values: Mapping[int, StateView] | None = None,
) -> str:
    """One session: facts, swimlanes with a legend, the checkpoint tree, the events."""
    section = anchor(report.tenant, report.session)
    kind = report.framework[:1].upper() + report.framework[1:]
    facts = _facts(report)
    links_note = (f'<p class="note">{plural(report.links_left_out, "more link")} not drawn.</p>'
                  if report.links_left_out else "")
    return "".join([
        f'<section class="card session" id="s-{section}" data-session="'
        f'{escape(report.session)}"><h2>{escape(kind)} '
        f'{escape(report.session)} '
        f'<span class="tag">tenant {escape(report.tenant)}</span>{_default_tenant(report)}'
        "</h2>",
        f'<div class="facts">{"".join(facts)}</div>',
        _state(state),
        "<h3>Timeline: a lane per run, interrupt batch and thread namespace; across, the "
        "events' time (each event a step of its own; shaded: pauses)</h3>",
        f'<div class="scroll">{swimlanes(report)}</div>', _legend(report), links_note,
        _questions(report),
        "<h3>Checkpoint tree (parent → children; duplicates marked, forks as branches)</h3>",
        _tree(report.tree),
        f'<h3>Events (<span id="t-{section}-count">{len(report.rows)}</span> listed'
        + (f", {plural(report.rows_left_out, 'plain checkpoint')} left out"
           if report.rows_left_out
           else "") + ")</h3>",
        _events(report.rows, f"t-{section}", values or {}),
        "</section>",
    ])


def _facts(report: SessionReport) -> list[str]:
    """The session's (and its framework threads') counts and time span."""
    runs = len([lane for lane in report.lanes if lane.kind == "run"])
    batches = len([lane for lane in report.lanes if lane.kind == "batch"])
    facts = []
    if runs or not report.stories:
        facts.append(f"<span>{_bold_count(runs, 'run')}</span>")
    if report.stops:
        facts.append(f'<span class="bad"><b>{len(report.stops)}</b> stopped without '
                     "finishing</span>")
    facts += [f"<span>{_bold_count(report.checkpoints, 'checkpoint')}</span>",
              f"<span>{_bold_count(report.duplicates, 'duplicate')} (at-least-once)</span>"]
    if batches or not report.stories:
        facts += [f"<span>{_bold_count(batches, 'interrupt batch', 'interrupt batches')}</span>",
                  f"<span>{_bold_count(report.stale_claims, 'superseded claim')}</span>"]
    facts += [_thread_facts(story) for story in report.stories]
    facts.append(f"<span>from <b>{escape(when(report.first_recorded))}</b> to "
                 f"<b>{escape(when(report.last_recorded))}</b></span>")
    return facts


def _bold_count(count: int, noun: str, nouns: str | None = None) -> str:
    """``<b>1</b> run``, ``<b>2</b> runs``: a count in bold with its noun."""
    number, _, words = plural(count, noun, nouns).partition(" ")
    return f"<b>{number}</b> {escape(words)}"


def _thread_facts(story: ThreadStory) -> str:
    asked = len(story.questions)
    answered = sum(question.answered for question in story.questions)
    forks = len({s.checkpoint_id for s in story.steps if s.fork_of is not None})
    subgraphs = len([namespace for namespace in story.namespaces if namespace])
    noun = ("request for a human", "requests for a human") if story.frameworks == [
        AGENT_FRAMEWORK] else ("question", "questions")
    return (f"<span>{escape(' and '.join(story.frameworks))}: <b>{asked}</b> "
            f"{noun[0] if asked == 1 else noun[1]} (<b>{answered}</b> answered), "
            f"<b>{forks}</b> {'fork' if forks == 1 else 'forks'}, <b>{subgraphs}</b> "
            f"subgraph {'namespace' if subgraphs == 1 else 'namespaces'}</span>")


def _questions(report: SessionReport) -> str:
    """Each question a framework thread asked, who asked, and the answer that resumed it."""
    questions = [question for story in report.stories for question in story.questions]
    if not questions:
        return ""
    parts = ['<h3>Questions and answers</h3><p class="note">Asked by: the graph node (or '
             "workflow executor) that raised the question. Answered by: the principal the "
             "application recorded as appending the answer (an <code>acting_as</code> block, "
             "the adapter's <code>actor</code>); — when it named none.</p>"
             '<table class="qa"><tr><th class=num>asked</th><th>asked by</th><th>question</th>'
             "<th>answer</th><th>answered by</th><th class=num>answered</th></tr>"]
    for question in questions:
        where = f" in {question.namespace}" if question.namespace else ""
        answer = (f"<pre>{escape(pretty(question.answer))}</pre>" if question.answered
                  else '<b class="bad">not answered</b>')
        answered = (_jump(question.answer_position)
                    if question.answer_position is not None else "")
        parts.append(f'<tr class="question"><td class=num>{_jump(question.position)}</td>'
                     f"<td>{escape(question.node)}{escape(where)}</td>"
                     f"<td><pre>{escape(pretty(question.value))}</pre></td>"
                     f"<td>{answer}</td><td class=answerer>"
                     f"{escape(question.answered_by or '—') if question.answered else ''}</td>"
                     f"<td class=num>{answered}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


def _jump(position: int) -> str:
    return f'<a href="#ev-{position}" data-pos="{position}">#{position}</a>'


def _state(state: list[tuple[str, str]]) -> str:
    if not state:
        return ""
    cells = "".join(f"<span>{escape(label)} <b>{escape(value)}</b></span>"
                    for label, value in state)
    return f'<div class="facts state">{cells}</div>'


_LEGEND = (("checkpoint", "checkpoint"), ("duplicate", "duplicate (replayed step)"),
           ("fork", "fork (a second child of its branch point)"),
           ("writes", "pending writes (a task's output)"),
           ("created", "batch created"), ("claim", "claim"),
           ("stale", "superseded claim (its later attempts refused)"),
           ("capture", "capture"), ("effect", "dispatch marker (effect)"),
           ("finish", "finish / release"), ("expired", "expired"),
           ("unresolved", "effect unresolved (needs a reconcile)"),
           ("reconcile", "reconciliation"), ("tombstone", "deleted / removed"),
           ("undecodable", "undecodable event"), ("question", "question (interrupt, "
           "request for a human)"), ("answer", "answer (resume)"), ("failed", "task failed"))


_LINK_LEGEND = (("parent", "parent on another run (resume)"),
                ("replay", "replay of an earlier record"),
                ("resumes", "batch resumes from this checkpoint"),
                ("answers", "question → its answer"), ("fork", "branch point → fork"))


def _legend(report: SessionReport) -> str:
    """What the marks and lines drawn for this session mean (only those it has)."""
    kinds = set(report.counts)
    items = [f'<span><svg width="16" height="16"><g class="k-{kind}">{mark_shape(kind, 8, 8)}</g>'
             f"</svg>{escape(text)}</span>" for kind, text in _LEGEND if kind in kinds]
    drawn = {link.kind for link in report.links}
    items += [f'<span><svg width="26" height="10"><path class="link link-{kind}" '
              f'd="M1,5 L25,5"/></svg>{escape(text)}</span>'
              for kind, text in _LINK_LEGEND if kind in drawn]
    if report.stops:
        items.append(f'<span><svg width="24" height="24" class="stop">{stop_shape(5, 12)}'
                     "</svg>stopped without finishing (a run redone, a step never finished)"
                     "</span>")
    if report.deadlines:
        items.append('<span><svg width="10" height="20" class="deadline"><path d="M5,1 L5,19"/>'
                     "</svg>a superseded claim's lease ran out</span>")
    items.append('<span><svg width="26" height="14"><rect class="pause-key" x="1" y="1" '
                 'width="24" height="12"/></svg>pause (nothing recorded)</span>')
    if any(mark.broken for mark in report.marks):
        items.append('<span><svg width="20" height="20"><circle cx="10" cy="10" r="8" '
                     'fill="none" stroke="#c62828" stroke-width="2.5"/></svg>first broken '
                     "link</span>")
    return f'<div class="legend">{"".join(items)}</div>'


def _default_tenant(report: SessionReport) -> str:
    """A note on the tenant the adapters use when no tenant_id is given."""
    if report.tenant != DEFAULT_TENANT:
        return ""
    return ('<span class="tag default-tenant">the adapters\' default tenant: no tenant_id '
            "was given</span>")


def _tree(rows: list[TreeRow]) -> str:
    if not rows:
        return '<p class="note">No checkpoints.</p>'
    items = []
    for row in rows:
        if row.folded:
            note = f" ({escape(row.duplicate)})" if row.duplicate else ""
            items.append(f'<li class="fold" style="--d:{row.depth}">… '
                         f"{plural(row.folded, 'more checkpoint')} in a straight line{note} …</li>")
            continue
        dup = (f'<span class="tag dup" title="{escape(row.duplicate)}">duplicate</span>'
               if row.duplicate else "")
        root = " root" if row.depth == 0 and row is rows[0] else ""
        fork = (f'<span class="tag fork" title="a second child of {escape(row.fork)}">fork '
                f"from {escape(row.fork[:13])}</span>" if row.fork else "")
        note = f'<span class="note">{escape(row.note)}</span>' if row.note else ""
        step = "?" if row.step is None else row.step
        bad = (f'<span class="tag broken" title="verify found this checkpoint\'s event '
               f'wrong: do not trust it">{escape(row.problem)}</span>' if row.problem else "")
        broken = " broken" if row.problem else ""
        items.append(
            f'<li class="node{root}{broken}" style="--d:{row.depth}" data-pos="{row.position}">'
            f"<code>{escape(row.checkpoint_id)}</code> step {step} "
            f'<span class="tag">{escape(row.lane)}</span>'
            f'<span class="tag">#{row.position}</span>{bad}{dup}{fork}{note}</li>')
    return f'<div class="scroll tall"><ul class="tree">{"".join(items)}</ul></div>'


def _events(rows: list[Row], table_id: str, values: Mapping[int, StateView]) -> str:
    parts = [f'<input class="filter" type="search" placeholder="filter events…" '
             f'data-table="{table_id}">',
             '<p class="note">Principal: who the application recorded as appending the '
             "event (the log's <code>actor</code>, an <code>acting_as</code> block, "
             "<code>--actor</code>), covered by its hash; — when it named nobody. Done by: "
             "what the event itself names as doing it: the graph node or workflow executor "
             "that ran the step, the claim generation an interrupt decision was made under, "
             "the reconciler a reconciliation names.</p>",
             f'<div class="flow"><table id="{table_id}" class="events"><tr>'
             "<th class=num>#</th><th>recorded (UTC)</th><th>lane</th><th>type</th>"
             "<th>principal</th><th>done by</th><th>hash</th><th>what</th><th>details</th></tr>"]
    for row in rows:
        classes = "ev" + (" dup" if row.duplicate else "") + (" broken" if row.broken else "")
        parts.append(
            f'<tr class="{classes}" id="ev-{row.position}" data-pos="{row.position}">'
            f"<td class=num>{row.position}</td><td class='mono time'>"
            f"{escape(when(row.recorded_at))}</td><td class=time title=\"{escape(row.lane)}\">"
            f"{escape(short_lane(row.lane))}</td>"
            f"<td class=mono>{escape(row.type)}</td>"
            f"<td class=principal>{escape(row.principal or '—')}</td>"
            f"<td class=time>{escape(row.done_by)}</td>"
            f"<td class=mono>{escape(row.hash_prefix)}</td><td class=what>"
            f"{escape(row.what)}</td><td>{escape(row.details[:240])}"
            f"{state_cell(values.get(row.position))}</td></tr>")
    parts.append("</table></div>")
    return "".join(parts)


_DIFF_CLASS = {"+": "dadd", "-": "ddel", "~": "dchg"}


def state_cell(view: StateView | None) -> str:
    """A checkpoint's state, folded: its value pretty-printed and what changed since its
    parent (each opens on a click)."""
    if view is None:
        return ""
    if not view.pretty:
        return f'<div class="state-note">state: {escape(view.note)}</div>'
    note = f" ({escape(view.note)})" if view.note else ""
    parts = [f'<details class="state"><summary>state ({view.size:,} B){note}</summary>'
             f"<pre>{escape(view.pretty)}</pre></details>"]
    if view.parent is not None:
        summary = (f"changed since {escape(view.parent)}: "
                   f"{plural(len(view.diff), 'change')}" if view.diff
                   else f"unchanged since {escape(view.parent)}")
        lines = "".join(f'<span class="{_DIFF_CLASS.get(line[:1], "")}">{escape(line)}'
                        "</span>\n" for line in view.diff)
        parts.append(f'<details class="diff"><summary>{summary}</summary><pre>{lines}</pre>'
                     "</details>" if view.diff else f'<div class="state-note">{summary}</div>')
    return "".join(parts)


def short_lane(lane: str) -> str:
    """A lane as the table names it: a subgraph's namespace by its node (``review``)."""
    return lane.rpartition("|")[2].partition(":")[0] if ":" in lane else lane


def _detail_panel() -> str:
    return ('<aside id="detail" aria-live="polite"><header><span id="detail-title">Event'
            '</span><button id="detail-close" type="button">close ✕</button></header>'
            '<pre id="detail-body"></pre></aside>')
