"""View rows held in memory: the memory and file backends, rebuilds and replays use it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from projections.changes import Change, Delete, Insert, InsertIfAbsent, Update, Upsert, resolve
from projections.query import ViewQuery, row_matches
from projections.views import key_columns

Row = dict[str, Any]


class ViewTables:
    """Rows of every view table, keyed by primary key, changed only through `apply`."""

    def __init__(self, keys: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self._keys = dict(keys if keys is not None else key_columns())
        self._rows: dict[str, dict[tuple[Any, ...], Row]] = {name: {} for name in self._keys}

    def apply(self, change: Change, position: int) -> None:
        """Apply one change, with `AT_POSITION` standing for ``position``."""
        rows = self._rows[change.table]
        if isinstance(change, Upsert | Insert | InsertIfAbsent):
            row = resolve(change.row, position)
            key = self._key(change.table, row)
            if key in rows:
                if isinstance(change, Upsert):
                    rows[key] = {**rows[key], **row}
            else:
                rows[key] = row
        elif isinstance(change, Update):
            key = self._key(change.table, change.key)
            if key in rows:
                rows[key] = {**rows[key], **resolve(change.values, position)}
        elif isinstance(change, Delete):
            for key in [k for k, row in rows.items() if row_matches(row, change.where)]:
                del rows[key]

    def apply_all(self, changes: Iterable[tuple[Change, int]]) -> None:
        """Apply ``(change, position)`` pairs in order."""
        for change, position in changes:
            self.apply(change, position)

    def select(self, query: ViewQuery) -> list[Row]:
        """Answer a `ViewQuery` by scanning (fine for the sizes in-memory stores hold)."""
        rows = [row for row in self._rows[query.table].values() if row_matches(row, query.where)]
        if query.lookup is not None:
            keys, columns = frozenset(query.lookup.keys), query.lookup.columns
            rows = [row for row in rows if tuple(row.get(c) for c in columns) in keys]
        if query.order_by:
            rows.sort(key=lambda row: _sort_key(row, query.order_by), reverse=query.descending)
            if query.after is not None:
                after = _sort_key(dict(zip(query.order_by, query.after, strict=True)),
                                  query.order_by)
                if query.descending:
                    rows = [row for row in rows if _sort_key(row, query.order_by) < after]
                else:
                    rows = [row for row in rows if _sort_key(row, query.order_by) > after]
        if query.limit is not None:
            rows = rows[: query.limit]
        if query.columns is not None:
            return [{name: row.get(name) for name in query.columns} for row in rows]
        return [dict(row) for row in rows]

    def exists(self, table: str, where: Mapping[str, Any]) -> bool:
        """Whether ``table`` holds a row whose columns equal ``where``."""
        return any(row_matches(row, where) for row in self._rows[table].values())

    def row(self, table: str, key: tuple[Any, ...]) -> Row | None:
        """The row of ``table`` with this primary key (in its columns' order), if any."""
        return self._rows[table].get(key)

    def rows(self, table: str) -> Iterable[Row]:
        """Every row of ``table`` (not copies: read them, do not change them)."""
        return self._rows[table].values()

    def snapshot(self) -> dict[str, list[Row]]:
        """Every table's rows, sorted by key: the form views are compared in."""
        return {
            name: [dict(rows[key]) for key in sorted(rows, key=_none_first)]
            for name, rows in self._rows.items()
        }

    def _key(self, table: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row[column] for column in self._keys[table])


def _sort_key(row: Mapping[str, Any], columns: tuple[str, ...]) -> tuple[Any, ...]:
    # None after every value, as SQL backends sort NULL (PostgreSQL's default).
    return tuple((row.get(c) is None, row.get(c)) for c in columns)


def _none_first(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((part is not None, part) for part in key)
