"""Running projections outside an append: rebuild from the log, replay as of, compare.

All three are the same folds the backends run inline, applied to a `ViewTables` in
memory, so "the view is a function of the log" is checked by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar, overload

from eventlog.records import LogPage, RecordedEvent
from projections.base import Projection
from projections.changes import Change
from projections.memory import Row, ViewTables
from projections.views import key_columns


class FoldableLog(Protocol):
    """What the runner needs of a log (an `eventlog.EventLog` is one): its inline
    projections, its events in log order and its stored views."""

    @property
    def projections(self) -> Sequence[Projection]: ...

    async def read_all(
        self, after: str | None = None, limit: int = ..., tenant_id: str | None = None
    ) -> LogPage: ...

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]: ...


class ViewSink(Protocol):
    """Where folded changes go: `ViewTables` in memory, or anything else that applies them
    (``eventlog.log.SpilledViews`` keeps them in a temporary file)."""

    def apply(self, change: Change, position: int) -> None: ...


Sink = TypeVar("Sink", bound=ViewSink)


@dataclass(frozen=True, slots=True)
class ViewDifference:
    """One row where the stored view and a rebuild from the log disagree."""

    table: str
    key: tuple[Any, ...]
    rebuilt: Row | None
    stored: Row | None


@overload
def fold_events(projections: Sequence[Projection], events: Iterable[RecordedEvent]
                ) -> ViewTables: ...
@overload
def fold_events(projections: Sequence[Projection], events: Iterable[RecordedEvent],
                tables: Sink) -> Sink: ...
def fold_events(
    projections: Sequence[Projection],
    events: Iterable[RecordedEvent],
    tables: ViewSink | None = None,
) -> Any:
    """Fold ``events`` through every projection into ``tables`` (new `ViewTables` by
    default); return them."""
    sink = tables if tables is not None else ViewTables()
    for event in events:
        for projection in projections:
            for change in projection.fold(event):
                sink.apply(change, event.position)
    return sink


@overload
async def rebuild(
    log: FoldableLog, *, until_position: int | None = None, until_time: datetime | None = None
) -> ViewTables: ...
@overload
async def rebuild(
    log: FoldableLog, *, until_position: int | None = None, until_time: datetime | None = None,
    into: Sink,
) -> Sink: ...
async def rebuild(
    log: FoldableLog, *, until_position: int | None = None, until_time: datetime | None = None,
    into: ViewSink | None = None,
) -> Any:
    """Rebuild every view from the log alone, optionally as the views stood at a moment.

    ``until_position`` keeps the log-order prefix that ends before the first event whose
    position is above it; ``until_time`` the prefix before the first event recorded after
    it. Each prefix is a state the views really had. The views are folded into ``into``
    (returned), by default new `ViewTables` in memory; for a whole large log give
    ``eventlog.log.SpilledViews()``, whose memory does not grow with the log.
    """
    tables = into if into is not None else ViewTables()
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=1000)
        for event in page.events:
            if until_position is not None and event.position > until_position:
                return tables
            if until_time is not None and event.recorded_at > until_time:
                return tables
            fold_events(log.projections, (event,), tables)
        if not page.events:
            return tables
        cursor = page.cursor


async def compare_views(log: FoldableLog) -> list[ViewDifference]:
    """Every row where the stored views differ from a rebuild from the log."""
    rebuilt = (await rebuild(log)).snapshot()
    stored = await log.dump_views()
    return diff_snapshots(rebuilt, stored)


def diff_snapshots(
    rebuilt: dict[str, list[Row]], stored: dict[str, list[Row]]
) -> list[ViewDifference]:
    """Row-by-row differences between two view snapshots of the same tables."""
    keys = key_columns()
    differences: list[ViewDifference] = []
    for table in sorted(set(rebuilt) | set(stored)):
        columns = keys.get(table, ())
        left = {tuple(row[c] for c in columns): row for row in rebuilt.get(table, [])}
        right = {tuple(row[c] for c in columns): row for row in stored.get(table, [])}
        for key in sorted(set(left) | set(right), key=repr):
            if left.get(key) != right.get(key):
                differences.append(ViewDifference(table, key, left.get(key), right.get(key)))
    return differences
