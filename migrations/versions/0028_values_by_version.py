"""``thread_channel_values`` keyed by version before channel (issue 41, writing each fact
once): its primary key becomes (tenant_id, thread_id, namespace, channel_version,
channel), was (…, channel, channel_version).

LangGraph gives every channel a step changes the same new version (one per step, its
integer part growing), so a put's value rows now sit side by side at the end of the
thread's range: one leaf page written a put, where ordered by channel first each row went
to its channel's own leaf (measured on SQLite, the chat thread of
`benchmarks.bench_steps`: 4.3 pages of this table per ``aput``). Every read of the table
names the whole key (a checkpoint's values by (channel, version), the history walk, the
removals) or the thread alone, so each reads as before.

SQLite (a ``WITHOUT ROWID`` table is its key's b-tree) rebuilds the table from its own
stored text with the key's columns in the new order; PostgreSQL (and Citus, which
carries the change to every shard) replaces the primary key constraint. The downgrade
puts the old order back.

Revision ID: 0028_values_by_version
Revises: 0027_subgraph_index
"""

from alembic import context, op

revision = "0028_values_by_version"
down_revision = "0027_subgraph_index"
branch_labels = None
depends_on = None

_TABLE = "thread_channel_values"
_CONSTRAINT = "thread_channel_values_pkey"
_BY_VERSION = ("tenant_id", "thread_id", "namespace", "channel_version", "channel")
_BY_CHANNEL = ("tenant_id", "thread_id", "namespace", "channel", "channel_version")
_COLUMNS = (*_BY_CHANNEL, "encoding", "digest")


def upgrade() -> None:
    _rekey(_BY_CHANNEL, _BY_VERSION)


def downgrade() -> None:
    _rekey(_BY_VERSION, _BY_CHANNEL)


def _rekey(old: tuple[str, ...], new: tuple[str, ...]) -> None:
    if context.get_context().dialect.name == "sqlite":
        _rebuild_sqlite(old, new)
        return
    schema = context.config.attributes.get("schema")
    table = f'"{schema}"."{_TABLE}"' if schema else f'"{_TABLE}"'
    # Two statements (in the migration's one transaction): Citus refuses ADD CONSTRAINT
    # beside another subcommand of one ALTER TABLE on a distributed table.
    op.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{_CONSTRAINT}"')
    op.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{_CONSTRAINT}" '
               f'PRIMARY KEY ({", ".join(new)})')


def _rebuild_sqlite(old: tuple[str, ...], new: tuple[str, ...]) -> None:
    connection = op.get_bind()
    found = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (_TABLE,)).first()
    if found is None:
        return
    created = str(found[0])
    was, becomes = (f"PRIMARY KEY ({', '.join(key)})" for key in (old, new))
    if was not in created:
        if becomes in created:
            return  # already so
        raise RuntimeError(f"unexpected shape of {_TABLE}: {created[:300]}")
    aside = f"{_TABLE}__key_rebuild"
    columns = ", ".join(_COLUMNS)
    op.execute(f'ALTER TABLE "{_TABLE}" RENAME TO "{aside}"')
    op.execute(created.replace(was, becomes))
    op.execute(f'INSERT INTO "{_TABLE}" ({columns}) SELECT {columns} FROM "{aside}"')
    op.execute(f'DROP TABLE "{aside}"')
