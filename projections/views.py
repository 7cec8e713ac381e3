"""The view tables, declared once as SQLAlchemy Core metadata (no schema, no dialect).

SQL backends copy these into their schema; the in-memory view store keys rows by each
table's primary key. Every key starts with ``tenant_id``.
"""

from __future__ import annotations

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


def key_columns() -> dict[str, tuple[str, ...]]:
    """Each view table's primary-key column names, in declaration order."""
    return {
        name: tuple(column.name for column in table.primary_key.columns)
        for name, table in metadata.tables.items()
    }
