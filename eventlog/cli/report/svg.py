"""The swimlane timeline of one session as inline SVG (a pure function of its model).

The x axis is time on the events' clock, with every event given a step of its own: a
share of the width goes to log order (so a burst of appends in one millisecond stays
readable) and the rest is spread in proportion to the time between events, so a worker
stalled for five minutes or a lease left to run out shows as the gap it was; pauses
longer than `PAUSE_MIN_S` are shaded and labelled with their length. Up to `WIDE_LIMIT`
events each get a step of `STEP` pixels; beyond that the events share `MAX_COLUMNS`
columns and a column holding several marks of a lane is drawn as one bar whose tooltip
counts them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

from eventlog.cli.render import plural
from eventlog.cli.report.model import SessionReport
from eventlog.cli.report.parts import Lane, Link, Mark, Stop

LABEL_WIDTH = 180
LANE_HEIGHT = 44
TOP = 40
BOTTOM = 24
RIGHT = 44
"""Room right of the last mark for its tick's time and a stop mark."""
"""Room under the lanes for the pauses' lengths."""
STEP = 26
"""Pixels of log order per event while every event has its own column."""
WIDE_LIMIT = 160
MAX_COLUMNS = 600
PLOT_WIDTH = 1160
"""Pixels the plot takes at least (the page's width at 1400 pixels, labels aside)."""
FIT_WIDTH = 1420
"""An SVG up to this wide is scaled to the width of the page."""
MAX_LANES = 60
"""Lanes drawn one by one; the rest share one last lane."""
PAUSE_MIN_S = 30.0
MAX_PAUSES = 12

_PRIORITY = ("undecodable", "failed", "question", "answer", "fork", "stale", "effect", "reconcile",
             "claim", "duplicate", "unresolved", "expired", "finish", "capture", "created",
             "tombstone", "checkpoint", "writes", "other")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the marks go: each mark's x and column, and the lane of each key."""

    xs: list[float]
    columns: list[int]
    """The column of each mark: marks of a lane in one column share a bar."""
    column_width: float
    plot_width: float
    lane_rows: dict[str, int]
    lane_count: int

    def x(self, index: int) -> float:
        """The centre of the mark at ``index`` (of its column's bar when columns are shared)."""
        return self.xs[index]

    def x_at(self, at: float, marks: list[Mark]) -> float:
        """Where a moment falls between the marks around it (by time between them)."""
        later = bisect_left([mark.at for mark in marks], at)
        if later >= len(marks):
            return self.xs[-1]
        if later == 0:
            return self.xs[0]
        before, after = marks[later - 1], marks[later]
        share = (at - before.at) / (after.at - before.at) if after.at > before.at else 0.0
        return self.xs[later - 1] + share * (self.xs[later] - self.xs[later - 1])

    def column(self, index: int) -> int:
        """The column the mark at ``index`` falls in."""
        return self.columns[index]

    def y(self, lane: str) -> float:
        """The centre line of a lane."""
        return TOP + (self.lane_rows.get(lane, self.lane_count - 1) + 0.5) * LANE_HEIGHT

    @property
    def width(self) -> float:
        return LABEL_WIDTH + self.plot_width + RIGHT

    @property
    def height(self) -> float:
        return TOP + self.lane_count * LANE_HEIGHT + BOTTOM


def layout(report: SessionReport) -> Layout:
    """The layout of ``report``'s lanes and marks."""
    marks = report.marks
    count = len(marks)
    total = marks[-1].at if marks else 0.0
    if count <= WIDE_LIMIT:
        plot = max(PLOT_WIDTH, count * STEP * (1.5 if total > 0 else 1.0))
        timed = plot - count * STEP if total > 0 else 0.0
    else:
        plot = PLOT_WIDTH
        timed = plot / 2 if total > 0 else 0.0
    step = (plot - timed) / max(count, 1)
    xs = [step * (m.index + 0.5) + (timed * m.at / total if total > 0 else 0.0)
          for m in marks]
    if count <= WIDE_LIMIT:
        columns, width = list(range(count)), step
    else:
        width = plot / MAX_COLUMNS
        columns = [min(int(x / width), MAX_COLUMNS - 1) for x in xs]
        xs = [(column + 0.5) * width for column in columns]
    rows = {lane.key: min(i, MAX_LANES) for i, lane in enumerate(report.lanes)}
    lanes = min(len(report.lanes), MAX_LANES + 1)
    return Layout([LABEL_WIDTH + x for x in xs], columns, width, plot, rows, max(lanes, 1))


def swimlanes(report: SessionReport) -> str:
    """The session's lanes, pauses, marks, stops and links as one ``<svg>`` element (a
    note when the session had no events yet at the moment shown)."""
    if not report.marks:
        return '<p class="note">No events of this session yet at this moment.</p>'
    shape = layout(report)
    fit = " fit" if shape.width <= FIT_WIDTH else ""
    parts = [
        f'<svg class="lanes{fit}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{shape.width:.0f}" height="{shape.height:.0f}" '
        f'viewBox="0 0 {shape.width:.0f} {shape.height:.0f}" role="img" '
        f'aria-label="swimlane timeline of {escape(report.session)}">',
        _lane_backgrounds(report.lanes, shape),
        _pauses(report, shape),
        _axis(report, shape),
        _links(report.links, report.marks, shape),
        _marks(report.marks, shape),
        _stops(report.stops, shape),
        _deadlines(report, shape),
        "</svg>",
    ]
    return "".join(parts)


def _lane_backgrounds(lanes: list[Lane], shape: Layout) -> str:
    parts = []
    for row in range(shape.lane_count):
        y = TOP + row * LANE_HEIGHT
        lane = lanes[row] if row < MAX_LANES or len(lanes) == MAX_LANES + 1 else None
        if lane is None:
            label, title, kind = plural(len(lanes) - MAX_LANES, "more lane"), "", "run"
        else:
            label, title, kind = lane.key, lane.ident, lane.kind
        text, short = lane_text(label, kind, title)
        parts.append(
            f'<g class="lane lane-{kind}" data-lane="{escape(label)}">'
            f'<rect x="0" y="{y}" width="{shape.width:.0f}" height="{LANE_HEIGHT}" '
            f'class="lane-bg"/><text x="8" y="{y + LANE_HEIGHT / 2 + 4:.0f}" '
            f'class="lane-label">{escape(text)}<tspan class="lane-id">{escape(short)}'
            f'</tspan><title>{escape(label)} {escape(title)}</title></text></g>'
        )
    return "".join(parts)


def lane_text(key: str, kind: str, ident: str) -> tuple[str, str]:
    """A lane's label and the short id after it: a subgraph's namespace
    (``review:1f0…|inner:…``) reads ``└ inner`` indented by its depth, with its task id; a
    fork's branch ``branch 1 (fork)``."""
    if kind == "branch":
        return f"{key.rpartition(' · ')[2]} (fork)", ""
    if kind != "subgraph":
        return key, f" {ident[:8]}" if ident else ""
    depth = key.count("|")
    name, _, task = key.rpartition("|")[2].partition(":")
    return f"{'  ' * depth}└ {name}", f" {task[:8]}"


def _axis(report: SessionReport, shape: Layout) -> str:
    """Times (UTC, the events' clock) and positions over the lanes, 110 pixels apart."""
    first = report.first_recorded
    parts = ['<g class="axis">']
    last_x = -1e9
    for mark in report.marks:
        x = shape.x(mark.index)
        if x - last_x < 110:
            continue
        last_x = x
        clock = _clock(first, mark.at, report.marks[-1].at)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" '
                     f'y2="{shape.height - BOTTOM:.0f}"/><text x="{x:.1f}" y="{TOP - 22}" '
                     f'class="tick-time">{clock}</text><text x="{x:.1f}" y="{TOP - 8}">'
                     f"#{mark.position}</text>")
    parts.append("</g>")
    return "".join(parts)


def _clock(first: datetime | None, at: float, span: float) -> str:
    """A tick's time, as precise as the span needs: milliseconds within a minute, the
    date across days."""
    if first is None:
        return ""
    moment = first + timedelta(seconds=at)
    if span < 60:
        return moment.strftime("%H:%M:%S.%f")[:-3]
    if span >= 86_400 or moment.date() != first.date():
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%H:%M:%S")


def _pauses(report: SessionReport, shape: Layout) -> str:
    """The longest pauses between consecutive events, shaded and labelled."""
    marks = report.marks
    gaps = [(marks[i].at - marks[i - 1].at, i) for i in range(1, len(marks))]
    span = marks[-1].at if marks else 0.0
    floor = max(PAUSE_MIN_S, span / 20)
    chosen = sorted(sorted((g for g in gaps if g[0] >= floor), reverse=True)[:MAX_PAUSES],
                    key=lambda gap: gap[1])
    parts = ['<g class="pauses">']
    bottom = shape.height - BOTTOM
    for seconds, i in chosen:
        x1, x2 = shape.x(i - 1) + 9, shape.x(i) - 9
        if x2 - x1 < 6:
            continue
        text = f"{duration(seconds)} pause"
        parts.append(
            f'<g class="pause" data-seconds="{seconds:.0f}"><title>{escape(text)}: nothing was '
            f"recorded between #{marks[i - 1].position} and #{marks[i].position}</title>"
            f'<rect x="{x1:.1f}" y="{TOP}" width="{x2 - x1:.1f}" height="{bottom - TOP:.0f}"/>'
            f'<text x="{(x1 + x2) / 2:.1f}" y="{bottom + 15:.0f}">{escape(text)}</text></g>')
    parts.append("</g>")
    return "".join(parts)


def duration(seconds: float) -> str:
    """``5 min 30 s``, ``2 h 5 min``, ``3 d 4 h``: a pause's length for people."""
    whole = round(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    units = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    shown = [(n, unit) for n, unit in units if n][:2] or [(0, "s")]
    return " ".join(f"{n} {unit}" for n, unit in shown)


def _stops(stops: list[Stop], shape: Layout) -> str:
    """A red bar and cross just after the last event of a run that stopped unfinished."""
    parts = ['<g class="stops">']
    for stop in stops:
        x, y = shape.x(stop.index) + 13, shape.y(stop.lane)
        parts.append(f'<g class="stop" data-run="{escape(stop.lane)}"><title>'
                     f"{escape(stop.label)}</title>{stop_shape(x, y)}</g>")
    parts.append("</g>")
    return "".join(parts)


def _deadlines(report: SessionReport, shape: Layout) -> str:
    """A dashed line across a lane where a lease ran out, labelled."""
    parts = ['<g class="deadlines">']
    for deadline in report.deadlines:
        x, y = shape.x_at(deadline.at, report.marks), shape.y(deadline.lane)
        parts.append(f'<g class="deadline"><title>{escape(deadline.label)}</title>'
                     f'<path d="M{x:.1f},{y - 16:.1f} L{x:.1f},{y + 16:.1f}"/>'
                     f'<text x="{x + 4:.1f}" y="{y - 8:.1f}">lease ran out</text></g>')
    parts.append("</g>")
    return "".join(parts)


def stop_shape(x: float, y: float) -> str:
    """The stop mark: a bar across the lane with a cross beside it."""
    return (f'<path d="M{x:.1f},{y - 11:.1f} L{x:.1f},{y + 11:.1f}" class="bar"/>'
            f'<path d="M{x + 3:.1f},{y - 4:.1f} L{x + 11:.1f},{y + 4:.1f} M{x + 11:.1f},'
            f'{y - 4:.1f} L{x + 3:.1f},{y + 4:.1f}" class="cross"/>')


def _links(links: list[Link], marks: list[Mark], shape: Layout) -> str:
    parts = ['<g class="links">']
    for link in links:
        source, target = marks[link.source], marks[link.target]
        x1, y1 = shape.x(source.index), shape.y(source.lane)
        x2, y2 = shape.x(target.index), shape.y(target.lane)
        if y1 == y2:  # a replay on the same lane: an arc over it
            lift = min(LANE_HEIGHT * 0.45, 6 + abs(x2 - x1) / 6)
            d = f"M{x1:.1f},{y1 - 6:.1f} Q{(x1 + x2) / 2:.1f},{y1 - 6 - lift:.1f} " \
                f"{x2:.1f},{y2 - 6:.1f}"
        else:
            middle = (x1 + x2) / 2
            d = f"M{x1:.1f},{y1:.1f} C{middle:.1f},{y1:.1f} {middle:.1f},{y2:.1f} " \
                f"{x2:.1f},{y2:.1f}"
        parts.append(f'<path class="link link-{link.kind}" d="{d}" '
                     f'data-from="{source.position}" data-to="{target.position}"/>')
    parts.append("</g>")
    return "".join(parts)


def _marks(marks: list[Mark], shape: Layout) -> str:
    cells: dict[tuple[int, str], list[Mark]] = defaultdict(list)
    for mark in marks:
        cells[(shape.column(mark.index), mark.lane)].append(mark)
    parts = ['<g class="marks">']
    for (_column, _lane), group in cells.items():
        if len(group) == 1:
            parts.append(_mark(group[0], shape))
        else:
            parts.append(_bin(group, shape))
    parts.append("</g>")
    parts.append(_captions([group[0] for group in cells.values() if len(group) == 1], shape))
    return "".join(parts)


def _captions(marks: list[Mark], shape: Layout) -> str:
    """The captions of single marks, below the mark or else above it, never overlapping
    another of the lane (a caption with no room is left to the mark's tooltip)."""
    free: dict[tuple[str, int], float] = {}  # (lane, row) -> where the row is free from
    parts = ['<g class="captions">']
    for mark in sorted(marks, key=lambda m: m.index):
        if not mark.caption:
            continue
        x, y = shape.x(mark.index), shape.y(mark.lane)
        width = 6.2 * len(mark.caption)
        # Kept whole inside the plot: a caption at either end is moved in (off the lane
        # labels on the left, inside the picture on the right).
        x = min(max(x, LABEL_WIDTH + width / 2 + 2), shape.width - width / 2 - 2)
        for row, dy in ((0, 18), (1, -10)):
            if free.get((mark.lane, row), -1e9) <= x - width / 2:
                free[(mark.lane, row)] = x + width / 2 + 4
                parts.append(f'<text class="caption" x="{x:.1f}" y="{y + dy:.1f}" '
                             f'data-pos="{mark.position}">{escape(mark.caption)}</text>')
                break
    parts.append("</g>")
    return "".join(parts)


def _mark(mark: Mark, shape: Layout) -> str:
    x, y = shape.x(mark.index), shape.y(mark.lane)
    broken = " broken" if mark.broken else ""
    ring = f'<circle class="ring" cx="{x:.1f}" cy="{y:.1f}" r="10"/>' if mark.broken else ""
    return (f'<g class="mark k-{mark.kind}{broken}" data-pos="{mark.position}" tabindex="0">'
            f"<title>{escape(mark.label)}</title>{ring}{mark_shape(mark.kind, x, y)}</g>")


def mark_shape(kind: str, x: float, y: float) -> str:
    """The shape of a mark of ``kind`` centred on (x, y)."""
    if kind == "fork":
        return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6.5"/>'
                f'<circle class="fork-ring" cx="{x:.1f}" cy="{y:.1f}" r="9.5"/>')
    if kind in ("checkpoint", "duplicate", "expired", "unresolved"):
        radius = 6.5 if kind == "duplicate" else 5.5
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
    if kind in ("claim", "stale"):
        diamond = f"{x:.1f},{y - 7:.1f} {x + 7:.1f},{y:.1f} {x:.1f},{y + 7:.1f} {x - 7:.1f},{y:.1f}"
        cross = (f'<path class="cross" d="M{x - 4:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 4:.1f} '
                 f'M{x + 4:.1f},{y - 4:.1f} L{x - 4:.1f},{y + 4:.1f}"/>' if kind == "stale"
                 else "")
        return f'<polygon points="{diamond}"/>{cross}'
    if kind == "effect":
        bolt = (f"{x + 1:.1f},{y - 8:.1f} {x - 5:.1f},{y + 1:.1f} {x:.1f},{y + 1:.1f} "
                f"{x - 2:.1f},{y + 8:.1f} {x + 5:.1f},{y - 1:.1f} {x:.1f},{y - 1:.1f}")
        return f'<polygon points="{bolt}"/>'
    if kind == "capture":
        return (f'<polygon points="{x - 6:.1f},{y + 5:.1f} {x + 6:.1f},{y + 5:.1f} '
                f'{x:.1f},{y - 6:.1f}"/>')
    if kind in ("question", "answer", "failed"):
        glyph = {"question": "?", "answer": "✓", "failed": "!"}[kind]
        return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7.5"/>'
                f'<text x="{x:.1f}" y="{y + 4:.1f}" class="glyph">{glyph}</text>')
    if kind == "writes":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" rx="1"/>'
    if kind == "undecodable":
        return (f'<rect x="{x - 6:.1f}" y="{y - 6:.1f}" width="12" height="12"/>'
                f'<text x="{x:.1f}" y="{y + 4:.1f}" class="glyph">!</text>')
    return f'<rect x="{x - 5.5:.1f}" y="{y - 5.5:.1f}" width="11" height="11" rx="2"/>'


def _bin(group: list[Mark], shape: Layout) -> str:
    kinds = Counter(mark.kind for mark in group)
    dominant = min(kinds, key=_PRIORITY.index) if all(k in _PRIORITY for k in kinds) else "other"
    broken = any(mark.broken for mark in group)
    x, y = shape.x(group[0].index), shape.y(group[0].lane)
    width = max(shape.column_width - 0.5, 1.5)
    counted = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    title = f"#{group[0].position} to #{group[-1].position}: {counted}"
    return (f'<g class="bin k-{dominant}{" broken" if broken else ""}" '
            f'data-pos="{group[0].position}" data-count="{len(group)}">'
            f"<title>{escape(title)}</title>"
            f'<rect x="{x - width / 2:.2f}" y="{y - 9:.1f}" width="{width:.2f}" height="18"/>'
            "</g>")
