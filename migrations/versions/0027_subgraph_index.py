"""``thread_checkpoints_by_thread`` holds only the subgraphs' checkpoints (issue 41,
writing each fact once): a partial index of the rows whose namespace is not the main
graph's (``''``), ``WHERE length(namespace) > 0`` (not ``<> ''``, which PostgreSQL would
prove from a read of one subgraph namespace and could read that namespace through this
index: `eventlog.storage.sqltext`).

The index serves one read, a page of a thread across its namespaces, newest first by id.
The main graph's rows are already in that order in the primary key (tenant, thread,
namespace, id) under namespace ``''``, so the page is read as two ordered, limited halves
merged (`projections.query.ViewQuery.split`): the main namespace through the primary key,
the others through this index. A main-graph put (every put of a graph without
subgraphs) then writes no entry into it: one b-tree fewer a put on SQLite, one index
fewer on PostgreSQL.

The downgrade builds the whole index again.

Revision ID: 0027_subgraph_index
Revises: 0026_positions_without_sequence
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0027_subgraph_index"
down_revision = "0026_positions_without_sequence"
branch_labels = None
depends_on = None

_TABLE = "thread_checkpoints"
_INDEX = "thread_checkpoints_by_thread"
_COLUMNS = ["tenant_id", "thread_id", "checkpoint_id"]


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    subgraphs = sa.text("length(namespace) > 0")
    op.drop_index(_INDEX, _TABLE, schema=schema)
    op.create_index(_INDEX, _TABLE, _COLUMNS, schema=schema,
                    postgresql_where=subgraphs, sqlite_where=subgraphs)


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.drop_index(_INDEX, _TABLE, schema=schema)
    op.create_index(_INDEX, _TABLE, _COLUMNS, schema=schema)
