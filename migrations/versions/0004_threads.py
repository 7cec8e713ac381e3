"""The thread views: checkpoints by id, pending writes, and the records holding blobs.

Revision ID: 0004_threads
Revises: 0003_interrupts
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0004_threads"
down_revision = "0003_interrupts"
branch_labels = None
depends_on = None

ID = sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "thread_checkpoints",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("checkpoint_id", ID, primary_key=True),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("parent_id", ID, nullable=True),
        sa.Column("run_key", sa.Text, nullable=True),
        sa.Column("step", sa.BigInteger, nullable=True),
        sa.Column("state_encoding", ID, nullable=False),
        sa.Column("state_digest", sa.LargeBinary, nullable=False),
        sa.Column("channels", sa.Text, nullable=False),
        sa.Column("metadata", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    op.create_index("thread_checkpoints_by_id", "thread_checkpoints",
                    ["tenant_id", "checkpoint_id"], schema=schema)
    op.create_index("thread_checkpoints_by_run", "thread_checkpoints",
                    ["tenant_id", "run_key"], schema=schema)
    op.create_table(
        "thread_checkpoint_records",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("checkpoint_id", ID, nullable=False),
        sa.Column("digests", sa.Text, nullable=False),
        schema=schema,
    )
    op.create_table(
        "thread_writes",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("checkpoint_id", ID, primary_key=True),
        sa.Column("task_id", ID, primary_key=True),
        sa.Column("idx", sa.BigInteger, primary_key=True),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("encoding", ID, nullable=False),
        sa.Column("digest", sa.LargeBinary, nullable=False),
        sa.Column("task_path", sa.Text, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        schema=schema,
    )
    op.create_table(
        "thread_write_records",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("slot", sa.BigInteger, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("checkpoint_id", ID, nullable=False),
        sa.Column("digest", sa.LargeBinary, nullable=False),
        schema=schema,
    )
    op.create_table(
        "thread_channel_values",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("namespace", sa.Text, primary_key=True),
        sa.Column("channel", sa.Text, primary_key=True),
        sa.Column("channel_version", sa.Text, primary_key=True),
        sa.Column("encoding", ID, nullable=False),
        sa.Column("digest", sa.LargeBinary, nullable=False),
        schema=schema,
    )
    op.create_table(
        "thread_value_records",
        sa.Column("tenant_id", ID, primary_key=True),
        sa.Column("thread_id", ID, primary_key=True),
        sa.Column("version", sa.BigInteger, primary_key=True),
        sa.Column("slot", sa.BigInteger, primary_key=True),
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("channel_version", sa.Text, nullable=False),
        sa.Column("digest", sa.LargeBinary, nullable=False),
        schema=schema,
    )


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
