"""The swimlane timeline of one session as inline SVG (a pure function of its model).

The x axis is the session's log order, not wall time: a stalled worker's minutes and a
burst of appends in one millisecond take the same room per event. Up to `WIDE_LIMIT`
events each get their own column; beyond that the events share `MAX_COLUMNS` columns and
a column holding several marks of a lane is drawn as one bar whose tooltip counts them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from html import escape

from eventlog.cli.report.model import Lane, Link, Mark, SessionReport

LABEL_WIDTH = 180
LANE_HEIGHT = 38
TOP = 26
COLUMN = 26
"""Pixels per event while every event has its own column."""
WIDE_LIMIT = 160
MAX_COLUMNS = 600
PLOT_WIDTH = 1000
"""Pixels the events share once there are more than `WIDE_LIMIT`."""
MAX_LANES = 60
"""Lanes drawn one by one; the rest share one last lane."""

_PRIORITY = ("undecodable", "stale", "effect", "reconcile", "claim", "duplicate",
             "unresolved", "expired", "finish", "capture", "created", "tombstone",
             "checkpoint", "writes", "other")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the marks go: how many columns, how wide, and the lane of each key."""

    events: int
    columns: int
    column_width: float
    lane_rows: dict[str, int]
    lane_count: int

    def x(self, index: int) -> float:
        """The centre of the column of the mark at ``index``."""
        return LABEL_WIDTH + (self.column(index) + 0.5) * self.column_width

    def column(self, index: int) -> int:
        """The column the mark at ``index`` falls in."""
        return index * self.columns // max(self.events, 1)

    def y(self, lane: str) -> float:
        """The centre line of a lane."""
        return TOP + (self.lane_rows.get(lane, self.lane_count - 1) + 0.5) * LANE_HEIGHT

    @property
    def width(self) -> float:
        return LABEL_WIDTH + self.columns * self.column_width + 20

    @property
    def height(self) -> float:
        return TOP + self.lane_count * LANE_HEIGHT + 8


def layout(report: SessionReport) -> Layout:
    """The layout of ``report``'s lanes and marks."""
    events = len(report.marks)
    if events <= WIDE_LIMIT:
        columns, width = events, float(COLUMN)
    else:
        columns = min(events, MAX_COLUMNS)
        width = PLOT_WIDTH / columns
    rows = {lane.key: min(i, MAX_LANES) for i, lane in enumerate(report.lanes)}
    count = min(len(report.lanes), MAX_LANES + 1)
    return Layout(events, max(columns, 1), width, rows, max(count, 1))


def swimlanes(report: SessionReport) -> str:
    """The session's lanes, marks and links as one ``<svg>`` element (a note when the
    session had no events yet at the moment shown)."""
    if not report.marks:
        return '<p class="note">No events of this session yet at this moment.</p>'
    shape = layout(report)
    parts = [
        f'<svg class="lanes" xmlns="http://www.w3.org/2000/svg" width="{shape.width:.0f}" '
        f'height="{shape.height:.0f}" role="img" aria-label="swimlane timeline of session '
        f'{escape(report.session)}">',
        _lane_backgrounds(report.lanes, shape),
        _axis(report, shape),
        _links(report.links, report.marks, shape),
        _marks(report.marks, shape),
        "</svg>",
    ]
    return "".join(parts)


def _lane_backgrounds(lanes: list[Lane], shape: Layout) -> str:
    parts = []
    for row in range(shape.lane_count):
        y = TOP + row * LANE_HEIGHT
        lane = lanes[row] if row < MAX_LANES or len(lanes) == MAX_LANES + 1 else None
        if lane is None:
            label, title, kind = f"{len(lanes) - MAX_LANES} more lanes", "", "run"
        else:
            label = lane.key
            title, kind = lane.ident, lane.kind
        short = f" {title[:8]}" if title else ""
        parts.append(
            f'<g class="lane lane-{kind}" data-lane="{escape(label)}">'
            f'<rect x="0" y="{y}" width="{shape.width:.0f}" height="{LANE_HEIGHT}" '
            f'class="lane-bg"/><text x="8" y="{y + LANE_HEIGHT / 2 + 4:.0f}" '
            f'class="lane-label">{escape(label)}<tspan class="lane-id">{escape(short)}'
            f'</tspan><title>{escape(label)} {escape(title)}</title></text></g>'
        )
    return "".join(parts)


def _axis(report: SessionReport, shape: Layout) -> str:
    every = max(1, int(90 // max(shape.column_width, 0.001)))
    parts = ['<g class="axis">']
    seen = set()
    for mark in report.marks:
        column = shape.column(mark.index)
        if column % every or column in seen:
            continue
        seen.add(column)
        x = shape.x(mark.index)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{shape.height:.0f}"/>'
                     f'<text x="{x:.1f}" y="{TOP - 8}">#{mark.position}</text>')
    parts.append("</g>")
    return "".join(parts)


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
    return "".join(parts)


def _mark(mark: Mark, shape: Layout) -> str:
    x, y = shape.x(mark.index), shape.y(mark.lane)
    broken = " broken" if mark.broken else ""
    ring = f'<circle class="ring" cx="{x:.1f}" cy="{y:.1f}" r="10"/>' if mark.broken else ""
    return (f'<g class="mark k-{mark.kind}{broken}" data-pos="{mark.position}" tabindex="0">'
            f"<title>{escape(mark.label)}</title>{ring}{mark_shape(mark.kind, x, y)}</g>")


def mark_shape(kind: str, x: float, y: float) -> str:
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
