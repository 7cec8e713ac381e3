"""SQLite's event positions without ``AUTOINCREMENT`` (issue 41, writing each fact once).

``AUTOINCREMENT`` made SQLite keep the highest position ever handed out in its own table,
``sqlite_sequence``, and update that row at every commit that appended: one more b-tree
(a page of the write-ahead log) in every commit, an adapter ``aput`` and ``aput_writes``
included. What it bought was that a position is never handed out twice even after the
last events are deleted. The library never deletes an event; whoever can delete one
(the DBA) can as easily rewrite ``sqlite_sequence``, and a deleted event is what
``verify`` (the stream heads, the chains) and the transparency tree name. So the position
becomes a plain ``INTEGER PRIMARY KEY`` (the rowid, as before: one past the highest
stored), and ``sqlite_sequence`` is no longer written.

The table is rebuilt in place (as 0015 rebuilt the view tables): renamed aside, created
again from its own stored ``CREATE TABLE`` text less ``AUTOINCREMENT``, its rows copied
with their positions, the old table dropped, its indexes created again from their stored
text. A big log's upgrade copies the whole table once. PostgreSQL's positions come from an
identity column (a sequence that logs its state once per 32 values): unchanged.

The downgrade puts ``AUTOINCREMENT`` back and records the highest position in
``sqlite_sequence``, so older code goes on from there.

Revision ID: 0026_positions_without_sequence
Revises: 0025_holdings_folded
"""

from alembic import context, op

revision = "0026_positions_without_sequence"
down_revision = "0025_holdings_folded"
branch_labels = None
depends_on = None

_AUTOINCREMENT = " AUTOINCREMENT"
_TABLE = "events"


def upgrade() -> None:
    if context.get_context().dialect.name == "sqlite":
        _rebuild(autoincrement=False)


def downgrade() -> None:
    if context.get_context().dialect.name == "sqlite":
        _rebuild(autoincrement=True)


def _rebuild(*, autoincrement: bool) -> None:
    connection = op.get_bind()
    found = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (_TABLE,)).first()
    if found is None:
        return
    created = str(found[0])
    head, separator, rest = created.partition("position INTEGER NOT NULL PRIMARY KEY")
    if not separator or rest.startswith(_AUTOINCREMENT) == autoincrement:
        # Already so; or a table an older downgrade rebuilt (Alembic's batch mode, 0019
        # and 0010) with a table-level ``PRIMARY KEY (position)``: that rebuild had
        # already dropped ``AUTOINCREMENT``, and it is left as it was.
        return
    rest = _AUTOINCREMENT + rest if autoincrement else rest[len(_AUTOINCREMENT):]
    indexes = [str(row[0]) for row in connection.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ? "
        "AND sql IS NOT NULL", (_TABLE,))]
    aside = f"{_TABLE}__sequence_rebuild"
    op.execute(f'ALTER TABLE "{_TABLE}" RENAME TO "{aside}"')
    op.execute(head + separator + rest)
    op.execute(f'INSERT INTO "{_TABLE}" SELECT * FROM "{aside}"')
    op.execute(f'DROP TABLE "{aside}"')
    for index in indexes:
        op.execute(index)
    if autoincrement:
        # An AUTOINCREMENT table's counter lives in sqlite_sequence, which the copy above
        # already advanced to the highest position copied; said again so it holds as well
        # for an empty table (no row) as for a full one.
        op.execute(f"DELETE FROM sqlite_sequence WHERE name = '{_TABLE}'")
        op.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT '{_TABLE}', "
                   f'COALESCE(MAX(position), 0) FROM "{_TABLE}"')
