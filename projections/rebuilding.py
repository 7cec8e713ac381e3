"""Views rebuilt from the log outside an append: rebuild, replay as of, compare.

All three are the same folds the backends run inline, applied to a `ViewTables` in
memory (or to any other `ViewSink`, such as ``eventlog.log.SpilledViews``, a temporary
file), so "the view is a function of the log" is checked by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar, overload

from eventlog.records import LogPage, RecordedEvent
from projections.base import Projection
from projections.changes import Change, Upsert
from projections.memory import Row, ViewTables
from projections.query import ViewQuery
from projections.views import key_columns


class FoldableLog(Protocol):
    """What a rebuild needs of a log (an `eventlog.EventLog` is one): its inline
    projections, its events in log order and its stored views."""

    @property
    def projections(self) -> Sequence[Projection]: ...

    async def read_all(
        self, after: str | None = None, limit: int = ..., tenant_id: str | None = None
    ) -> LogPage: ...

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]: ...

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]: ...


class ViewSink(Protocol):
    """Where folded changes go: `ViewTables` in memory, or anything else that applies them
    (``eventlog.log.SpilledViews`` keeps them in a temporary file)."""

    def apply(self, change: Change, position: int) -> None: ...


Sink = TypeVar("Sink", bound=ViewSink)


class ViewStore(ViewSink, Protocol):
    """A sink that answers view queries and is closed after use (``SpilledViews``)."""

    def select(self, query: ViewQuery) -> list[Row]: ...

    def close(self) -> None: ...


COMPARE_PAGE = 1000
"""Rows per query when `compare_views` reads views a page at a time."""


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


async def compare_views(
    log: FoldableLog, *, spill: Callable[[], ViewStore] | None = None
) -> list[ViewDifference]:
    """Every row where the stored views differ from a rebuild from the log.

    By default both sides are held in memory. With ``spill`` (a factory such as
    ``eventlog.log.SpilledViews``) the rebuild goes into one store it makes and the stored
    views, read a page at a time, into another; the two are then compared a page at a
    time in key order, so memory stays bounded however large the log.
    """
    if spill is None:
        rebuilt = (await rebuild(log)).snapshot()
        stored = await log.dump_views()
        return diff_snapshots(rebuilt, stored)
    rebuilt_store, stored_store = spill(), spill()
    try:
        await rebuild(log, into=rebuilt_store)
        keys = key_columns()
        for table, columns in sorted(keys.items()):
            after: tuple[Any, ...] | None = None
            while True:
                page = await log.query(ViewQuery(table, order_by=columns, after=after,
                                                 limit=COMPARE_PAGE))
                for row in page:
                    stored_store.apply(Upsert(table, row), 0)
                if len(page) < COMPARE_PAGE:
                    break
                after = tuple(page[-1][column] for column in columns)
        return [
            difference
            for table, columns in sorted(keys.items())
            for difference in _merge(table, columns, _rows_in_key_order(
                rebuilt_store, table, columns), _rows_in_key_order(stored_store, table, columns))
        ]
    finally:
        rebuilt_store.close()
        stored_store.close()


def _rows_in_key_order(store: ViewStore, table: str, columns: tuple[str, ...]) -> Iterator[Row]:
    after: tuple[Any, ...] | None = None
    while True:
        page = store.select(ViewQuery(table, order_by=columns, after=after, limit=COMPARE_PAGE))
        yield from page
        if len(page) < COMPARE_PAGE:
            return
        after = tuple(page[-1][column] for column in columns)


def _merge(table: str, columns: tuple[str, ...], rebuilt: Iterator[Row],
           stored: Iterator[Row]) -> Iterator[ViewDifference]:
    """The differences of two row streams sorted by the same key (both from stores of one
    kind, so they order keys alike)."""
    left, right = next(rebuilt, None), next(stored, None)
    while left is not None or right is not None:
        left_key = None if left is None else tuple(left[c] for c in columns)
        right_key = None if right is None else tuple(right[c] for c in columns)
        if right_key is None or (left_key is not None and left_key < right_key):
            assert left_key is not None
            yield ViewDifference(table, left_key, left, None)
            left = next(rebuilt, None)
        elif left_key is None or right_key < left_key:
            yield ViewDifference(table, right_key, None, right)
            right = next(stored, None)
        else:
            if left != right:
                yield ViewDifference(table, left_key, left, right)
            left, right = next(rebuilt, None), next(stored, None)


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
