"""``thread_checkpoints_by_id`` goes (issue 41, writing each fact once): every put wrote
an entry into it, and no hot read used it.

Its reads were a search by checkpoint id in any thread (`ThreadCheckpoints.find`) and,
through it, Agent Framework's load and delete by id. That adapter saves each checkpoint
under its id as its run key, so it now reads through ``thread_checkpoints_by_run``
(`ThreadCheckpoints.of_run`); `find` reads the tenant's rows (the primary key's tenant
range), a search made by hand, not by any adapter per step. PostgreSQL may have taken
the index for a read by the whole key (tenant, thread, namespace, id); that read is the
primary key's.

The downgrade builds the index again, as 0024 shaped it: (checkpoint_id, tenant_id).

Revision ID: 0029_no_checkpoint_id_index
Revises: 0028_values_by_version
"""

from alembic import context, op

revision = "0029_no_checkpoint_id_index"
down_revision = "0028_values_by_version"
branch_labels = None
depends_on = None

_TABLE = "thread_checkpoints"
_INDEX = "thread_checkpoints_by_id"


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    # if_exists: a schema built from today's metadata and stamped with an older revision
    # (as the upgrade tests of earlier migrations build theirs) has none.
    op.drop_index(_INDEX, _TABLE, schema=schema, if_exists=True)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_index(_INDEX, _TABLE, ["checkpoint_id", "tenant_id"], schema=schema)
