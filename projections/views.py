"""The view tables, declared once as SQLAlchemy Core metadata (no schema, no dialect).

SQL backends copy these into their schema; the in-memory view store keys rows by each
table's primary key. Every key starts with ``tenant_id``.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

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


def key_columns() -> dict[str, tuple[str, ...]]:
    """Each view table's primary-key column names, in declaration order."""
    return {
        name: tuple(column.name for column in table.primary_key.columns)
        for name, table in metadata.tables.items()
    }
