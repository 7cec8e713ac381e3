"""Each (tenant, subject)'s data keys, wrapped by the keyring's KEK (issue 32): a row per
key generation; erasure sets ``wrapped`` to NULL, rotation rewrites it under a new KEK.

Revision ID: 0012_subject_keys
Revises: 0010_actor
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0012_subject_keys"
down_revision = "0010_actor"
branch_labels = None
depends_on = None


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "subject_keys",
        sa.Column("tenant_id", _text(), primary_key=True),
        sa.Column("subject", _text(), primary_key=True),
        sa.Column("generation", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("kek_id", _text(), nullable=False),
        sa.Column("wrapped", sa.LargeBinary, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
        schema=schema,
    )


def downgrade() -> None:
    op.drop_table("subject_keys", schema=context.config.attributes.get("schema"))
