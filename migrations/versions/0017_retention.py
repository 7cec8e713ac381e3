"""Retention's schema (issue 32 §6): the subject a record names, and the thread record
views indexed by what a removal deletes them by.

``checkpoints.subject`` and ``thread_checkpoints.subject`` hold the subject the caller
named for the record (`CheckpointCreated.subject`; NULL when it is the session's or
thread's own id), with a partial index on (tenant, subject) of the rows that name one:
a legal hold on a subject shared by many sessions finds them, and a retention pass knows
when a subject has no record left. Rows that name none (nearly all) are not indexed.

The thread record views by what a removal deletes them by: a
`ThreadCheckpointsRemoved` (retention, ``prune``, ``delete_runs``) deletes
``thread_checkpoint_records`` and ``thread_write_records`` rows by (namespace,
checkpoint id) and ``thread_value_records`` rows by (namespace, channel, channel
version), and their keys are by version: each delete read every row of the thread
(EXPLAIN on 3,000 checkpoints of a thread: 3,000 and 6,000 rows removed by the filter, 1
and 10 ms a statement), so removing k checkpoints of an n-checkpoint thread read k·n
rows inside the transaction that holds the thread. Each index leads with the thread and
ends with the deleted key, so a delete seeks its rows.

Revision ID: 0017_retention
Revises: 0016_quiet_notify
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0017_retention"
down_revision = "0016_quiet_notify"
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
SUBJECTS = (("checkpoints_by_subject", "checkpoints"),
            ("thread_checkpoints_by_subject", "thread_checkpoints"))
"""As `projections.checkpoints` and `projections.threads` declare them."""


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, schema=schema)
    for name, table in SUBJECTS:
        op.add_column(table, sa.Column("subject", _text(), nullable=True), schema=schema)
        named = sa.text("subject IS NOT NULL")
        op.create_index(name, table, ["tenant_id", "subject"], schema=schema,
                        postgresql_where=named, sqlite_where=named)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    for name, table in SUBJECTS:
        op.drop_index(name, table, schema=schema)
        op.drop_column(table, "subject", schema=schema)
    for name, table, _columns in INDEXES:
        op.drop_index(name, table, schema=schema)
