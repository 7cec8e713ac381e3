"""The checkpoint views: checkpoints, sessions, runs.

Revision ID: 0002_checkpoints
Revises: 0001_log
"""

import sqlalchemy as sa  # noqa: F401 - used once the tables are declared
from alembic import context, op  # noqa: F401

revision = "0002_checkpoints"
down_revision = "0001_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")  # noqa: F841


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
