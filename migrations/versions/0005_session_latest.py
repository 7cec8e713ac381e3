"""The session view carries its latest record whole (parent and metadata too), so
``latest`` reads one small row instead of the checkpoints index.

Revision ID: 0005_session_latest
Revises: 0004_threads
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0005_session_latest"
down_revision = "0004_threads"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.add_column("checkpoint_sessions", sa.Column("latest_parent_id", sa.String(255),
                                                   nullable=True), schema=schema)
    op.add_column("checkpoint_sessions", sa.Column("latest_metadata", sa.Text, nullable=False,
                                                   server_default="{}"), schema=schema)
    prefix = f'"{schema}".' if schema else ""
    # Existing sessions take their latest checkpoint's parent and metadata.
    for column, source in (("latest_parent_id", "parent_id"), ("latest_metadata", "metadata")):
        op.execute(
            f"UPDATE {prefix}checkpoint_sessions SET {column} = ("
            f"SELECT c.{source} FROM {prefix}checkpoints AS c "
            f"WHERE c.tenant_id = {prefix}checkpoint_sessions.tenant_id "
            f"AND c.session_id = {prefix}checkpoint_sessions.session_id "
            f"AND c.version = {prefix}checkpoint_sessions.latest_version)"
        )


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.drop_column("checkpoint_sessions", "latest_metadata", schema=schema)
    op.drop_column("checkpoint_sessions", "latest_parent_id", schema=schema)
