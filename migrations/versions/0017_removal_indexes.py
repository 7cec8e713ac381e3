"""The thread record views by what a removal deletes them by (issue 32 §6): a
`ThreadCheckpointsRemoved` (retention, ``prune``, ``delete_runs``) deletes
``thread_checkpoint_records`` and ``thread_write_records`` rows by (namespace,
checkpoint id) and ``thread_value_records`` rows by (namespace, channel, channel
version), and their keys are by version: each delete read every row of the thread
(EXPLAIN on 3,000 checkpoints of a thread: 3,000 and 6,000 rows removed by the filter, 1
and 10 ms a statement), so removing k checkpoints of an n-checkpoint thread read k·n
rows inside the transaction that holds the thread. Each index leads with the thread and
ends with the deleted key, so a delete seeks its rows.

Revision ID: 0017_removal_indexes
Revises: 0015_write_pages
"""

from alembic import context, op

revision = "0017_removal_indexes"
down_revision = "0015_write_pages"
branch_labels = None
depends_on = None

INDEXES = (
    ("thread_checkpoint_records_by_checkpoint", "thread_checkpoint_records",
     ["tenant_id", "thread_id", "namespace", "checkpoint_id"]),
    ("thread_write_records_by_checkpoint", "thread_write_records",
     ["tenant_id", "thread_id", "namespace", "checkpoint_id"]),
    ("thread_value_records_by_value", "thread_value_records",
     ["tenant_id", "thread_id", "namespace", "channel", "channel_version"]),
)
"""As `projections.threads` declares them."""


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, schema=schema)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    for name, table, _columns in INDEXES:
        op.drop_index(name, table, schema=schema)
