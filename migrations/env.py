"""Alembic environment for checkpoint-eventlog.

Run only through `eventlog.storage.migrate`, which passes the open connection and the
target schema in ``config.attributes``; there is no alembic.ini and no offline mode.
"""

from alembic import context

config = context.config
schema = config.attributes.get("schema")

context.configure(
    connection=config.attributes["connection"],
    target_metadata=config.attributes.get("target_metadata"),
    version_table_schema=schema,
    transactional_ddl=True,
)

with context.begin_transaction():
    context.run_migrations()
