"""The checkpoint views: checkpoints, sessions, runs.

Revision ID: 0002_checkpoints
Revises: 0001_log
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0002_checkpoints"
down_revision = "0001_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "checkpoints",
        sa.Column("tenant_id", sa.String(255), primary_key=True),
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("run_id", sa.Uuid, nullable=False),
        sa.Column("checkpoint_id", sa.String(255), nullable=False),
        sa.Column("parent_id", sa.String(255), nullable=True),
        sa.Column("step", sa.BigInteger, nullable=False),
        sa.Column("state_digest", sa.LargeBinary, nullable=False),
        sa.Column("state_encoding", sa.String(16), nullable=False),
        sa.Column("state_size", sa.BigInteger, nullable=False),
        sa.Column("metadata", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    op.create_index("checkpoints_by_run", "checkpoints", ["tenant_id", "run_id", "position"], schema=schema)
    op.create_index("checkpoints_by_checkpoint_id", "checkpoints", ["tenant_id", "session_id", "checkpoint_id", "version"], schema=schema)
    op.create_index("checkpoints_by_parent", "checkpoints", ["tenant_id", "session_id", "parent_id", "version"], schema=schema)
    op.create_table(
        "checkpoint_sessions",
        sa.Column("tenant_id", sa.String(255), primary_key=True),
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("latest_version", sa.BigInteger, nullable=False),
        sa.Column("latest_position", sa.BigInteger, nullable=False),
        sa.Column("latest_checkpoint_id", sa.String(255), nullable=False),
        sa.Column("latest_run_id", sa.Uuid, nullable=False),
        sa.Column("latest_step", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    op.create_table(
        "checkpoint_runs",
        sa.Column("tenant_id", sa.String(255), primary_key=True),
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("run_id", sa.Uuid, primary_key=True),
        sa.Column("first_version", sa.BigInteger, nullable=False),
        sa.Column("first_position", sa.BigInteger, nullable=False),
        sa.Column("first_checkpoint_id", sa.String(255), nullable=False),
        sa.Column("first_parent_id", sa.String(255), nullable=True),
        sa.Column("first_step", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
