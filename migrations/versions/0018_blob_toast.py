"""Blob payloads stored out of line (``toast_tuple_target = 128`` on ``blobs``, PostgreSQL
and Citus only), so a reference-count update rewrites a row of ~100 bytes, not the payload
(issue 33 §1, pg15; see `eventlog.storage.schema.OUT_OF_LINE`). Rows already stored keep
their layout until they are next written.

Revision ID: 0018_blob_toast
Revises: 0017_retention
"""

from alembic import context, op

revision = "0018_blob_toast"
down_revision = "0017_retention"
branch_labels = None
depends_on = None

_TABLES = {"blobs": 128}


def _qualified(table: str) -> str:
    schema = context.config.attributes.get("schema")
    return f'"{schema}"."{table}"' if schema else f'"{table}"'


def upgrade() -> None:
    if context.get_context().dialect.name != "postgresql":
        return  # SQLite has no TOAST (its overflow pages are not rewritten by an update)
    for table, target in _TABLES.items():
        op.execute(f"ALTER TABLE {_qualified(table)} SET (toast_tuple_target = {target})")


def downgrade() -> None:
    if context.get_context().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"ALTER TABLE {_qualified(table)} RESET (toast_tuple_target)")
