"""Blobs of at most three bytes are no longer counted (issue 41, writing each fact once).

A graph's counters, token counts, booleans, nulls and empty values are blobs of a few
bytes, and every checkpoint names them again: each put added a reference to each (on
PostgreSQL a locked, rewritten row; on SQLite a rewritten page). Whoever holds a digest
(the events keep them all) finds a payload of three bytes or fewer by hashing every
candidate, so purging one erases nothing: such a blob is now stored once per tenant,
never counted and never purged (`eventlog.hashing.TOLD_BY_DIGEST`). This
revision sets the count of every such row to 0, what new appends leave in it, so a row
says the same whichever library wrote it, and an older library (which would count it
again, and purge it) does not open the upgraded schema.

The downgrade gives each such row back the count the older code keeps: the references
the events hold, folded as `verify` folds them (`eventlog.log._blobs.BlobLedger`); a row
no event holds a reference to any more is deleted, as that code would have purged it.

Revision ID: 0030_values_the_digest_tells
Revises: 0029_no_checkpoint_id_index
"""

import uuid

import sqlalchemy as sa
from alembic import context, op

revision = "0030_values_the_digest_tells"
down_revision = "0029_no_checkpoint_id_index"
branch_labels = None
depends_on = None

_TOLD = 3
"""`eventlog.hashing.TOLD_BY_DIGEST` as this revision knew it."""


def _blobs() -> str:
    schema = context.config.attributes.get("schema")
    return "blobs" if schema is None else f'"{schema}".blobs'


def upgrade() -> None:
    op.execute(f"UPDATE {_blobs()} SET refs = 0 WHERE length(data) <= {_TOLD} AND refs <> 0")


def downgrade() -> None:
    import eventlog  # noqa: F401 - registers the event types the fold decodes
    from eventlog.events import default_registry
    from eventlog.log._blobs import BlobLedger
    from eventlog.records import StoredEvent

    schema = context.config.attributes.get("schema")
    events = "events" if schema is None else f'"{schema}".events'
    bind = op.get_bind()
    small = {(tenant, bytes(digest)) for tenant, digest in bind.execute(sa.text(
        f"SELECT tenant_id, digest FROM {_blobs()} WHERE length(data) <= {_TOLD}"))}
    if not small:
        return
    ledger = BlobLedger(default_registry)
    try:
        rows = bind.execute(sa.text(
            "SELECT position, event_id, tenant_id, stream_id, stream_version, recorded_at, "
            f"type, data, prev_hash, hash FROM {events} "
            "ORDER BY tenant_id, stream_id, stream_version"))
        for row in rows:
            ledger.feed(StoredEvent(
                position=row[0], event_id=_uuid(row[1]), tenant_id=row[2], stream_id=row[3],
                version=row[4], recorded_at=row[5], type=row[6], data=bytes(row[7]),
                prev_hash=bytes(row[8]), hash=bytes(row[9])))
        counts = {(tenant, bytes(digest)): refs
                  for tenant, digest, refs, _, _ in ledger.counts()}
    finally:
        ledger.close()
    for tenant, digest in sorted(small):
        refs = counts.get((tenant, digest), 0)
        key = {"tenant": tenant, "digest": digest}
        if refs > 0:
            bind.execute(sa.text(f"UPDATE {_blobs()} SET refs = :refs "
                                 "WHERE tenant_id = :tenant AND digest = :digest"),
                         {**key, "refs": refs})
        else:
            bind.execute(sa.text(f"DELETE FROM {_blobs()} "
                                 "WHERE tenant_id = :tenant AND digest = :digest"), key)


def _uuid(value: object) -> uuid.UUID:

    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
