"""The keyrings an encrypted log's data keys are wrapped under (issue 40 §4): a row per
key-encryption key id, with a check value wrapped under that KEK, so a write without a
keyring, or with another keyring, is refused before anything is written
(`eventlog.log._mode`). A row with an empty id records a log first written without a
keyring: this upgrade writes it for a log that holds events but no data key (a keyring
added to it later is refused, not mixed in). On Citus the table stays on the coordinator.

Revision ID: 0020_encryption_mode
Revises: 0018_blob_toast
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import context, op

revision = "0020_encryption_mode"
down_revision = "0019_signatures"
branch_labels = None
depends_on = None


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    keyrings = op.create_table(
        "keyrings",
        sa.Column("kek_id", _text(), primary_key=True),
        sa.Column("check_value", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    bind = op.get_bind()

    def holds(table: str) -> bool:
        rows = sa.table(table, sa.column("tenant_id"), schema=schema)
        return bind.execute(sa.select(rows.c.tenant_id).limit(1)).first() is not None

    if holds("events") and not holds("subject_keys"):
        bind.execute(sa.insert(keyrings).values(kek_id="", check_value=b"",
                                                created_at=datetime.now(UTC)))


def downgrade() -> None:
    op.drop_table("keyrings", schema=context.config.attributes.get("schema"))
