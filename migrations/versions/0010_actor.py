"""Who did it (issue 31): each event may name the principal who appended it, in a nullable
``actor`` column of ``events``. NULL means none was given, as on every event written
before; the hash chain covers the actor only when there is one, so those events verify
unchanged. Adding a nullable column without a default rewrites no row (PostgreSQL and
SQLite alike), and on Citus the ALTER reaches every shard of the distributed table.

Revision ID: 0010_actor
Revises: 0009_transparency_tree
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0010_actor"
down_revision = "0009_transparency_tree"
branch_labels = None
depends_on = None


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.add_column("events", sa.Column("actor", _text(), nullable=True), schema=schema)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    with op.batch_alter_table("events", schema=schema) as batch:
        batch.drop_column("actor")
