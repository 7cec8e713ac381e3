"""The keyrings an encrypted log's data keys are wrapped under (issue 40 §4): a row per
key-encryption key id, with a check value wrapped under that KEK, so a write without a
keyring, or with another keyring, is refused before anything is written. Written by the
first write of a log opened with a keyring; on Citus it stays on the coordinator.

Revision ID: 0020_encryption_mode
Revises: 0018_blob_toast
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0020_encryption_mode"
down_revision = "0018_blob_toast"
branch_labels = None
depends_on = None


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    op.create_table(
        "keyrings",
        sa.Column("kek_id", _text(), primary_key=True),
        sa.Column("check_value", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        schema=context.config.attributes.get("schema"),
    )


def downgrade() -> None:
    op.drop_table("keyrings", schema=context.config.attributes.get("schema"))
