"""Signed appends (issue 40 §1): each event may carry the application's writer key's
signature of its chain hash, in a nullable ``signature`` column of ``events`` (the key's
8-byte id, then the 64-byte Ed25519 signature). NULL means unsigned, as on every event
written before: a log written then opens and verifies as it did, and is signed from its
next append by a log that holds a writer key. Adding a nullable column without a default
rewrites no row (PostgreSQL and SQLite alike), and on Citus the ALTER reaches every shard
of the distributed table.

Revision ID: 0019_signatures
Revises: 0018_blob_toast
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0019_signatures"
down_revision = "0018_blob_toast"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.add_column("events", sa.Column("signature", sa.LargeBinary(), nullable=True),
                  schema=schema)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    with op.batch_alter_table("events", schema=schema) as batch:
        batch.drop_column("signature")
