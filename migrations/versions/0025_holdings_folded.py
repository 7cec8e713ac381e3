"""The thread record views go (issue 41, writing each fact once):
``thread_checkpoint_records``, ``thread_value_records`` and ``thread_write_records``,
with their indexes.

Every put and every write inserted a row into them (three b-trees a put with their
indexes, two a write, on every backend) only so that a later removal, rare, could read
which blob references the removed checkpoints, values and writes held. A removal now folds
that from the thread's own events at the version it is fenced on
(`projections.thread_holdings`): the same rows, kept in memory, from checked events
rather than from rows anyone with the database could edit. The tables were a pure
function of the log, so nothing is lost by dropping them; the events stay.

The downgrade creates them again (as 0004, 0015 and 0017 left them) and fills them by the
fold they had, from the thread events' stored JSON (their digests are never sealed): the
rows the older code would have written, so it removes and releases as it did.

Revision ID: 0025_holdings_folded
Revises: 0024_reads
"""

import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision = "0025_holdings_folded"
down_revision = "0024_reads"
branch_labels = None
depends_on = None

TABLES = ("thread_checkpoint_records", "thread_value_records", "thread_write_records")
"""As `projections.threads` declared them until this revision."""


def upgrade() -> None:
    schema = context.config.attributes.get("schema")
    present = sa.inspect(op.get_bind())
    for table in TABLES:
        # A schema built from today's metadata and stamped with an older revision (as the
        # upgrade tests of earlier migrations build theirs) has none of them.
        if present.has_table(table, schema=schema):
            op.drop_table(table, schema=schema)  # its indexes go with it


def downgrade() -> None:
    schema = context.config.attributes.get("schema")
    sqlite = context.get_context().dialect.name == "sqlite"
    text = _text()
    key: list[sa.Column[Any]] = [
           sa.Column("tenant_id", text, primary_key=True),
           sa.Column("thread_id", text, primary_key=True),
           sa.Column("version", sa.BigInteger, primary_key=True)]
    extra = {"sqlite_with_rowid": False} if sqlite else {}  # 0015: WITHOUT ROWID
    tables = {
        "thread_checkpoint_records": op.create_table(
            "thread_checkpoint_records", *_copies(key),
            sa.Column("namespace", sa.Text, nullable=False),
            sa.Column("checkpoint_id", text, nullable=False),
            sa.Column("digests", sa.Text, nullable=False), schema=schema, **extra),
        "thread_write_records": op.create_table(
            "thread_write_records", *_copies(key),
            sa.Column("slot", sa.BigInteger, primary_key=True),
            sa.Column("namespace", sa.Text, nullable=False),
            sa.Column("checkpoint_id", text, nullable=False),
            sa.Column("digest", sa.LargeBinary, nullable=False), schema=schema, **extra),
        "thread_value_records": op.create_table(
            "thread_value_records", *_copies(key),
            sa.Column("slot", sa.BigInteger, primary_key=True),
            sa.Column("namespace", sa.Text, nullable=False),
            sa.Column("channel", sa.Text, nullable=False),
            sa.Column("channel_version", sa.Text, nullable=False),
            sa.Column("digest", sa.LargeBinary, nullable=False), schema=schema, **extra),
    }
    op.create_index("thread_checkpoint_records_by_checkpoint", "thread_checkpoint_records",
                    ["tenant_id", "thread_id", "namespace", "checkpoint_id"], schema=schema)
    op.create_index("thread_write_records_by_checkpoint", "thread_write_records",
                    ["tenant_id", "thread_id", "namespace", "checkpoint_id"], schema=schema)
    op.create_index("thread_value_records_by_value", "thread_value_records",
                    ["tenant_id", "thread_id", "namespace", "channel", "channel_version"],
                    schema=schema)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in tables}
    for name, row in _records(schema):
        rows[name].append(row)
    for name, table in tables.items():
        if rows[name] and table is not None:
            op.bulk_insert(table, rows[name])


def _text() -> sa.String:
    # Every text column compares bytewise on PostgreSQL (migration 0006).
    postgres = context.get_context().dialect.name == "postgresql"
    return sa.String(255, collation="C") if postgres else sa.String(255)


def _copies(columns: list[sa.Column[Any]]) -> list[sa.Column[Any]]:
    return [column._copy() for column in columns]


_TYPES = ("thread_checkpoint_put", "thread_writes_put", "thread_deleted",
          "thread_checkpoints_removed")


def _records(schema: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """The record rows the thread events fold to, as `projections.threads` folded them
    before this revision: a put's state record and its values' (with their element
    slots), a write event's writes' (with theirs), less what tombstones deleted."""
    events = sa.table("events", sa.column("tenant_id"), sa.column("stream_id"),
                      sa.column("stream_version"), sa.column("type"), sa.column("data"),
                      schema=schema)
    query = (sa.select(events.c.tenant_id, events.c.stream_version, events.c.type,
                       events.c.data)
             .where(events.c.type.in_(_TYPES))
             .order_by(events.c.tenant_id, events.c.stream_id, events.c.stream_version))
    held: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for tenant, version, kind, data in op.get_bind().execute(query):
        event = json.loads(bytes(data))
        thread = (tenant, event["thread_id"])
        rows = held.setdefault(thread, [])
        base = {"tenant_id": tenant, "thread_id": event["thread_id"], "version": version}
        namespace = event.get("namespace", "")
        if kind == "thread_checkpoint_put":
            rows.append(("thread_checkpoint_records", {
                **base, "namespace": namespace, "checkpoint_id": event["checkpoint_id"],
                "digests": event["state_digest"]}))
            channels = event.get("channels", [])
            slot = len(channels)
            for index, ref in enumerate(channels):
                # A compact put (0032) leaves out the versions ``versions`` names.
                named = event["versions"][ref["name"]] if event.get("versions_named") else ""
                value = {**base, "namespace": namespace, "channel": ref["name"],
                         "channel_version": ref.get("version") or named or ref["digest"]}
                rows.append(("thread_value_records", {
                    **value, "slot": index, "digest": bytes.fromhex(ref["digest"])}))
                for element in ref.get("elements", []):
                    rows.append(("thread_value_records", {
                        **value, "slot": slot, "digest": bytes.fromhex(element)}))
                    slot += 1
        elif kind == "thread_writes_put":
            writes = event["writes"]
            slot = len(writes)
            at = {**base, "namespace": namespace, "checkpoint_id": event["checkpoint_id"]}
            for index, write in enumerate(writes):
                rows.append(("thread_write_records", {
                    **at, "slot": index, "digest": bytes.fromhex(write["digest"])}))
                for element in write.get("elements", []):
                    rows.append(("thread_write_records", {
                        **at, "slot": slot, "digest": bytes.fromhex(element)}))
                    slot += 1
        elif kind == "thread_deleted":
            rows.clear()
        else:
            removed = {(key.get("namespace", ""), key["checkpoint_id"])
                       for key in event.get("removed", [])}
            values = {(key.get("namespace", ""), key["channel"], key["version"])
                      for key in event.get("values", [])}
            rows[:] = [(name, row) for name, row in rows if not (
                (name != "thread_value_records"
                 and (row["namespace"], row["checkpoint_id"]) in removed)
                or (name == "thread_value_records"
                    and (row["namespace"], row["channel"], row["channel_version"]) in values))]
    for rows in held.values():
        yield from rows
