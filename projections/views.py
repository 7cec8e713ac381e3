"""The view tables, declared once as SQLAlchemy Core metadata (no schema, no dialect).

SQL backends copy these into their schema; the in-memory view store keys rows by each
table's primary key. Every key starts with ``tenant_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from eventlog.events import record_key

metadata = sa.MetaData()

ID = sa.String(255)

STREAM_HEADS = "stream_heads"
"""Each stream's last version, head hash and position: the log's own view."""

stream_heads = sa.Table(
    STREAM_HEADS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("stream_id", ID, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("head_hash", sa.LargeBinary, nullable=False),
    sa.Column("last_position", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)


SealedPaths = tuple[tuple[str, ...], ...]
"""Where sealed values sit inside a view column's JSON: paths by key, ``*`` for each item
of a list; ``()`` is the whole value."""

SEALED_VALUE: dict[str, Any] = {"sealed": ((),)}
"""A view column's ``info`` when the whole value is a sealed event field copied by a fold
(a checkpoint's metadata): on an encrypted log it holds the field's sealed marker."""


def sealed_columns_of(*tables: sa.Table) -> dict[str, dict[str, SealedPaths]]:
    """Table → column → `SealedPaths`, for the columns whose ``info`` says ``sealed``:
    what a projection tells the log its folds copy of sealed event fields (the log opens
    them on read, and refuses plaintext there)."""
    return {table.name: {column.name: column.info["sealed"] for column in table.columns
                         if "sealed" in column.info}
            for table in tables if any("sealed" in c.info for c in table.columns)}


@dataclass(frozen=True, slots=True)
class SealedRow:
    """Whose the sealed values a table's rows hold are, read from each row (a table's
    ``info["sealed_row"]``): sealed in the stream ``stream_prefix`` + the row's
    ``stream_column``, for the record `record_key` makes of its ``record_columns`` and,
    when the row's ``subject_column`` holds one, for that subject. The log refuses a
    value whose envelope names another (`SealRefused`): a sealed column copied from one
    subject's row into another's is not served as the other's data."""

    stream_prefix: str
    stream_column: str
    record_columns: tuple[str, ...]
    subject_column: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The row's columns the binding reads."""
        subject = () if self.subject_column is None else (self.subject_column,)
        return (self.stream_column, *self.record_columns, *subject)

    def expected(self, row: Mapping[str, Any]) -> tuple[str, str, str | None] | None:
        """The (stream, record, subject or None) the row's sealed values must name; None
        when the row lacks a column of the binding (not selected)."""
        if any(column not in row for column in self.columns):
            return None
        subject = None if self.subject_column is None else row[self.subject_column]
        return (self.stream_prefix + str(row[self.stream_column]),
                record_key(*(str(row[column]) for column in self.record_columns)), subject)


def sealed_rows_of(*tables: sa.Table) -> dict[str, SealedRow]:
    """Table → `SealedRow`, for the tables whose ``info`` binds their sealed values."""
    return {table.name: table.info["sealed_row"] for table in tables
            if "sealed_row" in table.info}


def key_columns() -> dict[str, tuple[str, ...]]:
    """Each view table's primary-key column names, in declaration order."""
    return {
        name: tuple(column.name for column in table.primary_key.columns)
        for name, table in metadata.tables.items()
    }
