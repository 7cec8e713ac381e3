"""Indexes that lead with what their reads fix besides the tenant (issue 41, reads):
``thread_checkpoints_by_id`` on (checkpoint_id, tenant_id) and
``thread_checkpoints_by_run`` on (run_key, tenant_id), were (tenant_id, checkpoint_id)
and (tenant_id, run_key). Their reads (a checkpoint found by id in any thread, a run's
checkpoints) fix both columns and seek either way; but led by the tenant, either index
could serve a thread's read by the tenant alone, and on tables never analyzed PostgreSQL
read a 10-checkpoint thread's latest through ``thread_checkpoints_by_run``, filtering
out the tenant's other 600 rows. Led by the id or the run, neither is usable by a read
that fixes only the tenant and the thread (tests/test_read_plans_without_statistics.py).

Revision ID: 0024_reads
Revises: 0023_consumer_seal
"""

from alembic import context, op

revision = "0024_reads"
down_revision = "0023_consumer_seal"
branch_labels = None
depends_on = None

_TABLE = "thread_checkpoints"


def _reshape(columns: dict[str, list[str]]) -> None:
    schema = context.config.attributes.get("schema")
    for name, names in columns.items():
        # A schema built from today's metadata (without ``thread_checkpoints_by_id`` since
        # 0029) and stamped with an older revision, as upgrade tests build theirs, has none.
        op.drop_index(name, _TABLE, schema=schema, if_exists=True)
        op.create_index(name, _TABLE, names, schema=schema)


def upgrade() -> None:
    _reshape({"thread_checkpoints_by_id": ["checkpoint_id", "tenant_id"],
              "thread_checkpoints_by_run": ["run_key", "tenant_id"]})


def downgrade() -> None:
    _reshape({"thread_checkpoints_by_id": ["tenant_id", "checkpoint_id"],
              "thread_checkpoints_by_run": ["tenant_id", "run_key"]})
