"""The interrupt view: one row per batch.

Revision ID: 0003_interrupts
Revises: 0002_checkpoints
"""

import sqlalchemy as sa  # noqa: F401 - used once the tables are declared
from alembic import context, op  # noqa: F401

revision = "0003_interrupts"
down_revision = "0002_checkpoints"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")  # noqa: F841


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
