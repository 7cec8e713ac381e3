"""A thread's checkpoints by id across its namespaces: ``thread_checkpoints_by_thread`` on
(tenant_id, thread_id, checkpoint_id), so a page of one thread's checkpoints in every
namespace seeks the thread instead of walking the tenant's ``thread_checkpoints_by_id``
and filtering out every other thread's rows (issue 25).

Revision ID: 0007_thread_read_indexes
Revises: 0006_bytewise_text
"""

from alembic import context, op

revision = "0007_thread_read_indexes"
down_revision = "0006_bytewise_text"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_index("thread_checkpoints_by_thread", "thread_checkpoints",
                    ["tenant_id", "thread_id", "checkpoint_id"], schema=schema)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.drop_index("thread_checkpoints_by_thread", "thread_checkpoints", schema=schema)
