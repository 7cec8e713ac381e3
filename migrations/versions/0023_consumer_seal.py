"""Consumers the database administrator cannot steer (issue 40 §5): each consumer's row
carries the writer key's signature of its name, scope, cursor, token, holder, lease and
update time (`eventlog.storage.contracts.consumers.row_digest`), NULL in a log without a
writer key. Rows written before this upgrade are unsigned: in a log with a writer key a
claim refuses them until an operator adopts each (``eventlog consumers reset NAME --to
CURSOR``, which signs it); docs/decisions/consumers.md. On Citus the table
stays on the coordinator, as before.

Revision ID: 0023_consumer_seal
Revises: 0020_encryption_mode
"""

import sqlalchemy as sa
from alembic import context, op

revision = "0023_consumer_seal"
down_revision = "0020_encryption_mode"
branch_labels = None
depends_on = None


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    # A schema stamped back to an older revision by hand may hold the column already.
    present = {column["name"] for column in
               sa.inspect(op.get_bind()).get_columns("consumers", schema=schema)}
    if "signature" not in present:
        op.add_column("consumers", sa.Column("signature", sa.LargeBinary, nullable=True),
                      schema=schema)


def downgrade() -> None:
    with op.batch_alter_table("consumers",
                              schema=context.config.attributes.get("schema")) as batch:
        batch.drop_column("signature")
