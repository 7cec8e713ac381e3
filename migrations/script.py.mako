"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
"""

import sqlalchemy as sa
from alembic import context, op

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    raise NotImplementedError("the event log is append-only; restore from a backup instead")
