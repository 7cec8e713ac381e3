"""Room on the pages of the view rows that appends update in place (``fillfactor`` 70 on
``stream_heads`` and ``checkpoint_sessions``, PostgreSQL only), so their updates stay HOT
updates: no index entry, no row moved to another page (issue 25, bytes per write; see
`eventlog.storage.schema.HOT_FILLFACTOR`). Existing pages keep their rows; new and
pruned pages fill to 70 %.

Revision ID: 0008_hot_view_rows
Revises: 0007_thread_read_indexes
"""

from alembic import context, op

revision = "0008_hot_view_rows"
down_revision = "0007_thread_read_indexes"
branch_labels = None
depends_on = None

_TABLES = {"stream_heads": 70, "checkpoint_sessions": 70}


def _qualified(table: str) -> str:
    schema = context.config.attributes.get("schema")
    return f'"{schema}"."{table}"' if schema else f'"{table}"'


def upgrade() -> None:
    if context.get_context().dialect.name != "postgresql":
        return  # SQLite has no fillfactor
    for table, fillfactor in _TABLES.items():
        op.execute(f"ALTER TABLE {_qualified(table)} SET (fillfactor = {fillfactor})")


def downgrade() -> None:
    if context.get_context().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {_qualified(table)} RESET (fillfactor)")
