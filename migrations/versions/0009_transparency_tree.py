"""Each tenant's transparency tree (issue 31): its integrated size and read cursor
(``tree_states``), the hashes of its perfect subtrees (``tree_nodes``) and each leaf's
event (``tree_leaves``). Derived from the events, like a view; written only by the log's
integrator, never by an append.

Revision ID: 0009_transparency_tree
Revises: 0008_hot_view_rows
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0009_transparency_tree"
down_revision = "0008_hot_view_rows"
branch_labels = None
depends_on = None


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "tree_states",
        sa.Column("tenant_id", _text(), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("cursor", _text(), nullable=True),
        schema=schema,
    )
    op.create_table(
        "tree_nodes",
        sa.Column("tenant_id", _text(), primary_key=True),
        sa.Column("level", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
        schema=schema,
    )
    op.create_table(
        "tree_leaves",
        sa.Column("tenant_id", _text(), primary_key=True),
        sa.Column("event_id", sa.Uuid, primary_key=True),
        sa.Column("leaf_index", sa.BigInteger, nullable=False),
        schema=schema,
    )


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    for table in ("tree_leaves", "tree_nodes", "tree_states"):
        op.drop_table(table, schema=schema)
