"""Durable consumers (issue 34): each consumer's scope, acknowledged cursor and lease
(``consumers``), and on PostgreSQL the wake-up every append sends its subscribers: a
statement trigger on ``events`` that calls ``pg_notify`` in the append's own transaction,
on one channel per log schema (`eventlog.storage.pgconsumers.channel_name`), with an
empty payload (a listener only learns that something committed, and reads with its
cursor as it would have after a poll).

Revision ID: 0014_consumers
Revises: 0012_subject_keys
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0014_consumers"
down_revision = "0012_subject_keys"
branch_labels = None
depends_on = None

NOTIFY_FUNCTION = """
CREATE OR REPLACE FUNCTION {schema}.eventlog_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(CASE WHEN octet_length(TG_TABLE_SCHEMA) <= 54
                           THEN 'eventlog.' || TG_TABLE_SCHEMA
                           ELSE 'eventlog.' || md5(TG_TABLE_SCHEMA) END, '');
    RETURN NULL;
END $$
"""
NOTIFY_TRIGGER = (
    "CREATE TRIGGER events_notify AFTER INSERT ON {schema}.events "
    "FOR EACH STATEMENT EXECUTE FUNCTION {schema}.eventlog_notify()"
)


def _text(length: int | None = 255) -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    kind = sa.String(length) if length else sa.Text()
    if postgres:
        kind.collation = "C"
    return kind


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    op.create_table(
        "consumers",
        sa.Column("name", _text(), primary_key=True),
        sa.Column("scope_tenant", _text(), nullable=True),
        sa.Column("types", _text(None), nullable=True),
        sa.Column("cursor", _text(), nullable=True),
        sa.Column("token", sa.BigInteger, nullable=False),
        sa.Column("holder", _text(), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        schema=schema,
    )
    if context.get_context().dialect.name == "postgresql":
        quoted = '"' + (schema or "public").replace('"', '""') + '"'
        op.execute(NOTIFY_FUNCTION.format(schema=quoted))
        op.execute(NOTIFY_TRIGGER.format(schema=quoted))


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    if context.get_context().dialect.name == "postgresql":
        quoted = '"' + (schema or "public").replace('"', '""') + '"'
        op.execute(f"DROP TRIGGER IF EXISTS events_notify ON {quoted}.events")
        op.execute(f"DROP FUNCTION IF EXISTS {quoted}.eventlog_notify()")
    op.drop_table("consumers", schema=schema)
