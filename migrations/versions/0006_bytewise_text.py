"""Every text column compares bytewise on PostgreSQL (``COLLATE "C"``), as on SQLite and
in memory: under a database's own collation (``en_US.UTF-8``, ICU) view queries and keyset
pages on text keys came back in another order than on the other backends.

Changing a column's collation rebuilds the indexes that hold it (the table itself is not
rewritten: the type stays the same).

Revision ID: 0006_bytewise_text
Revises: 0005_session_latest
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0006_bytewise_text"
down_revision = "0005_session_latest"
branch_labels = None
depends_on = None

_TEXT_COLUMNS = (
    "SELECT table_name, column_name, data_type, character_maximum_length "
    "FROM information_schema.columns WHERE table_schema = :schema "
    "AND data_type IN ('character varying', 'text') AND table_name != 'alembic_version' "
    "AND collation_name IS DISTINCT FROM :collation ORDER BY table_name, ordinal_position"
)


def _alter(collation: str) -> None:
    if context.get_context().dialect.name != "postgresql":
        return  # SQLite compares bytewise already (BINARY)
    schema = context.config.attributes.get("schema") or "public"
    rows = op.get_bind().execute(sa.text(_TEXT_COLUMNS),
                                 {"schema": schema, "collation": collation}).all()
    by_table: dict[str, list[str]] = {}
    for table, column, kind, length in rows:
        type_sql = "text" if kind == "text" else f"varchar({length})"
        by_table.setdefault(table, []).append(
            f'ALTER COLUMN "{column}" TYPE {type_sql} COLLATE "{collation}"')
    for table, changes in by_table.items():
        op.execute(f'ALTER TABLE "{schema}"."{table}" {", ".join(changes)}')


def upgrade() -> None:
    _alter("C")


def downgrade() -> None:
    _alter("default")
