"""The interrupt view: one row per batch.

Revision ID: 0003_interrupts
Revises: 0002_checkpoints
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0003_interrupts"
down_revision = "0002_checkpoints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "interrupt_batches",
        sa.Column("tenant_id", sa.String(255), primary_key=True),
        sa.Column("batch_id", sa.String(255), primary_key=True),
        sa.Column("thread_id", sa.String(255), nullable=False),
        sa.Column("checkpoint_id", sa.String(255), nullable=False),
        sa.Column("operation_name", sa.String(255), nullable=False),
        sa.Column("operation_version", sa.String(255), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.Column("token_digest", sa.String(64), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("approval_expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("effect_started", sa.Boolean, nullable=False),
        sa.Column("effect_generation", sa.BigInteger, nullable=True),
        sa.Column("capture_id", sa.String(64), nullable=True),
        sa.Column("capture_generation", sa.BigInteger, nullable=True),
        sa.Column("capture_state", sa.String(32), nullable=True),
        sa.Column("resolution", sa.String(32), nullable=True),
        sa.Column("reconciled_by", sa.String(255), nullable=True),
        sa.Column("descriptor", sa.LargeBinary, nullable=False),
        sa.Column("created_position", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_position", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    indexes = {
        "interrupt_batches_list": ["tenant_id", "created_position"],
        "interrupt_batches_state": ["tenant_id", "state", "created_position"],
        "interrupt_batches_thread": ["tenant_id", "thread_id", "created_position"],
        "interrupt_batches_lease": ["state", "lease_expires_at"],
        "interrupt_batches_approval": ["state", "approval_expires_at"],
        "interrupt_batches_updated": ["state", "updated_at"],
        "interrupt_batches_capture": ["capture_state", "updated_at"],
    }
    for name, columns in indexes.items():
        op.create_index(name, "interrupt_batches", columns, schema=schema)


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
