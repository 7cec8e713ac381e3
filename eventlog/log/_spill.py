"""View rows in a private temporary SQLite file, for rebuilds of any size (the log's
scratch store: built on the SQLite backend's SQL, written to by folds only).

`projections.rebuild` folds a whole log into view tables. Held in memory (`ViewTables`)
they grow with the log: a replay or report of a log of millions of events needs gigabytes.
`SpilledViews` takes the same changes and answers the same queries from a private
temporary database (``sqlite3.connect("")``: SQLite keeps up to its cache in memory and
the rest in a file it deletes on close), with the SQL text the SQL backends run
(`eventlog.storage.sqltext`), so its rows are the rows the stored views hold.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex, CreateTable

from eventlog.errors import InvalidInput
from eventlog.storage.schema import build_metadata, view_table_names
from eventlog.storage.sqlite import decode_view_row, encode_value, view_decoders
from eventlog.storage.sqltext import (
    ChangeStatements,
    Positional,
    SqliteDialect,
    query_sql,
    quote,
)
from projections.changes import Change
from projections.query import ViewQuery

Row = dict[str, Any]

_DIALECT = sqlite_dialect.dialect()
_TEXT = SqliteDialect()


class SpilledViews:
    """Every view table in a temporary SQLite file, changed only through `apply`.

    A drop-in for `projections.memory.ViewTables` (``apply``, ``apply_all``, ``select``,
    ``snapshot``) whose memory stays bounded (``cache_kib`` of SQLite page cache) however
    many rows the views hold. Close it (or use it as a context manager) to delete the file.
    """

    def __init__(self, *, cache_kib: int = 32_768, commit_every: int = 10_000) -> None:
        self._connection = sqlite3.connect("", isolation_level=None)
        for pragma in ("PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF",
                       f"PRAGMA cache_size = -{int(cache_kib)}"):
            self._connection.execute(pragma)
        metadata = build_metadata("sqlite", None)
        tables = {name: metadata.tables[name] for name in view_table_names()}
        for table in tables.values():
            self._connection.execute(str(CreateTable(table).compile(dialect=_DIALECT)))
            for index in table.indexes:
                self._connection.execute(str(CreateIndex(index).compile(dialect=_DIALECT)))
        self._names = {name: quote(name) for name in tables}
        self._keys = {name: [c.name for c in table.primary_key.columns]
                      for name, table in tables.items()}
        self._nullable = {name: frozenset(c.name for c in table.columns if c.nullable)
                          for name, table in tables.items()}
        self._decoders = view_decoders(tables)
        self._changes = ChangeStatements(self._names, self._keys, Positional)
        self._commit_every = commit_every
        self._pending = 0
        self._connection.execute("BEGIN")

    def apply(self, change: Change, position: int) -> None:
        """Apply one change, with `AT_POSITION` standing for ``position``."""
        sql, values = self._changes(change, position)
        self._connection.execute(sql, [encode_value(value) for value in values])
        self._pending += 1
        if self._pending >= self._commit_every:
            # Committed in batches only to bound the transaction; nothing needs durability.
            self._connection.execute("COMMIT")
            self._connection.execute("BEGIN")
            self._pending = 0

    def apply_all(self, changes: Iterable[tuple[Change, int]]) -> None:
        """Apply ``(change, position)`` pairs in order."""
        for change, position in changes:
            self.apply(change, position)

    def select(self, query: ViewQuery) -> list[Row]:
        """Answer a `ViewQuery` as the SQL backends answer it (no ``with_blob``: a rebuild
        holds views, not blobs)."""
        if query.table not in self._names:
            raise InvalidInput("table", f"there is no view {query.table!r}")
        if query.with_blob is not None:
            raise InvalidInput("with_blob", "rebuilt views hold no blobs")
        if query.lookup is not None and not query.lookup.keys:
            return []  # no key, no row
        param = Positional()
        sql = query_sql(query, self._names, _TEXT, param, self._nullable[query.table])
        cursor = self._connection.execute(sql, [encode_value(value) for value in param.values])
        names = [column[0] for column in cursor.description]
        decoders = self._decoders[query.table]
        return [decode_view_row(names, row, decoders) for row in cursor]

    def snapshot(self) -> dict[str, list[Row]]:
        """Every table's rows, sorted by key: the form views are compared in."""
        return {name: self.select(ViewQuery(name, order_by=tuple(keys)))
                for name, keys in self._keys.items()}

    def close(self) -> None:
        """Close the database; SQLite deletes its file."""
        self._connection.close()

    def __enter__(self) -> SpilledViews:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
