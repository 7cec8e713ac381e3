"""``thread_checkpoints_by_run`` holds only the checkpoints that have a run key (issue
41, writing each fact once): a partial index ``WHERE run_key IS NOT NULL``.

Its reads are a run's checkpoints (`ThreadCheckpoints.of_run`: Agent Framework's load by
id, whose run key is the id) and `ThreadCheckpoints.delete_runs`, each by ``run_key =``
or ``run_key IN (...)``, which both databases read as implying ``IS NOT NULL`` and so
take the partial index for. A put without a run key (a LangGraph graph invoked without a
``run_id``: what a program calling ``graph.invoke`` writes) wrote an entry of NULL into
it that no read could ever find: now it writes none, one b-tree fewer a put on SQLite,
one index fewer on PostgreSQL.

The downgrade builds the whole index again.

Revision ID: 0031_runs_index_partial
Revises: 0030_values_the_digest_tells
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0031_runs_index_partial"
down_revision = "0030_values_the_digest_tells"
branch_labels = None
depends_on = None

_TABLE = "thread_checkpoints"
_INDEX = "thread_checkpoints_by_run"
_COLUMNS = ["run_key", "tenant_id"]


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    keyed = sa.text("run_key IS NOT NULL")
    op.drop_index(_INDEX, _TABLE, schema=schema, if_exists=True)
    op.create_index(_INDEX, _TABLE, _COLUMNS, schema=schema,
                    postgresql_where=keyed, sqlite_where=keyed)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.drop_index(_INDEX, _TABLE, schema=schema)
    op.create_index(_INDEX, _TABLE, _COLUMNS, schema=schema)
