"""Fewer b-tree pages per SQLite commit (issue 30 §4): the blob table and the view tables
an append writes become ``WITHOUT ROWID`` tables, each stored as ONE b-tree ordered by its
primary key, where a rowid table is two (the rows by rowid, and the primary key's
automatic index pointing at them). Every insert into a rowid table with a declared key
wrote both b-trees, so a page of each into the write-ahead log at every commit. SQLite
only: PostgreSQL has no rowid (its tables are unchanged).

Each table is rebuilt in place: renamed aside, created again from its own stored
``CREATE TABLE`` text with ``WITHOUT ROWID`` added, its rows copied, the old table
dropped, its indexes created again from their stored text. The rows, the columns, their
types and the indexes are exactly what they were.

Revision ID: 0015_write_pages
Revises: 0014_consumers
"""

from alembic import context, op

revision = "0015_write_pages"
down_revision = "0014_consumers"
branch_labels = None
depends_on = None

TABLES = (
    "stream_heads",
    "checkpoints",
    "checkpoint_sessions",
    "checkpoint_runs",
    "thread_checkpoints",
    "thread_checkpoint_records",
    "thread_writes",
    "thread_write_records",
    "thread_channel_values",
    "thread_value_records",
)
"""As `eventlog.storage.schema.SQLITE_WITHOUT_ROWID` declares them (at this revision)."""

_SUFFIX = " WITHOUT ROWID"


def upgrade() -> None:
    if context.get_context().dialect.name != "sqlite":
        return
    for table in TABLES:
        _rebuild(table, without_rowid=True)


def downgrade() -> None:
    if context.get_context().dialect.name != "sqlite":
        return
    for table in TABLES:
        _rebuild(table, without_rowid=False)


def _rebuild(table: str, *, without_rowid: bool) -> None:
    connection = op.get_bind()
    found = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (table,)).first()
    if found is None:
        return
    created = str(found[0]).rstrip()
    if created.upper().endswith(_SUFFIX) == without_rowid:
        return  # already so
    indexes = [str(row[0]) for row in connection.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? "
        "AND sql IS NOT NULL", (table,))]
    created = created + _SUFFIX if without_rowid else created[:-len(_SUFFIX)]
    aside = f"{table}__rowid_rebuild"
    op.execute(f'ALTER TABLE "{table}" RENAME TO "{aside}"')
    op.execute(created)
    op.execute(f'INSERT INTO "{table}" SELECT * FROM "{aside}"')
    op.execute(f'DROP TABLE "{aside}"')
    for index in indexes:
        op.execute(index)
