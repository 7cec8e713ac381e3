"""The append's wake-up costs nothing while nobody listens (issue 34): the statement
trigger of migration 0014 calls ``pg_notify`` only while some session holds the log's
listening lock, a shared advisory lock that every subscriber's listening connection takes
after its LISTEN and keeps for as long as it is connected
(`eventlog.storage.pgconsumers.Listener`). The trigger asks with an exclusive
``pg_try_advisory_lock`` and, when it gets the lock (nobody listens), releases it at once
and notifies nobody: a log that no one follows no longer takes its turn on PostgreSQL's
notification queue lock at every commit. A crashed listener's lock goes with its
connection, so no lease or clock is involved.

Revision ID: 0016_quiet_notify
Revises: 0015_write_pages
"""

from alembic import context, op

revision = "0016_quiet_notify"
down_revision = "0015_write_pages"
branch_labels = None
depends_on = None

QUIET_NOTIFY_FUNCTION = """
CREATE OR REPLACE FUNCTION {schema}.eventlog_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    channel text := CASE WHEN octet_length(TG_TABLE_SCHEMA) <= 54
                         THEN 'eventlog.' || TG_TABLE_SCHEMA
                         ELSE 'eventlog.' || md5(TG_TABLE_SCHEMA) END;
BEGIN
    -- Listeners hold this lock shared while they listen: taken, nobody listens.
    IF pg_try_advisory_lock(hashtext('eventlog.listening'), hashtext(channel)) THEN
        PERFORM pg_advisory_unlock(hashtext('eventlog.listening'), hashtext(channel));
    ELSE
        PERFORM pg_notify(channel, '');
    END IF;
    RETURN NULL;
END $$
"""

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
"""Migration 0014's function, restored by the downgrade."""


def _replace(function: str) -> None:
    if context.get_context().dialect.name != "postgresql":
        return
    schema = context.config.attributes.get("schema")
    quoted = '"' + (schema or "public").replace('"', '""') + '"'
    op.execute(function.format(schema=quoted))


def upgrade() -> None:
    _replace(QUIET_NOTIFY_FUNCTION)


def downgrade() -> None:
    _replace(NOTIFY_FUNCTION)
