"""The thread views: each checkpoint of a thread by id, the records holding blobs, writes.

Four tables, keyed from ``tenant_id``, folded from the events of
`eventlog.events.threads`:

- ``thread_checkpoints``: one row per (tenant, thread, namespace, checkpoint id), the
  latest put of that id (a put of an existing id overwrites the row, so a retried put
  never adds a row). Reads: newest first by checkpoint id within a thread and namespace
  (the primary key), across the tenant by checkpoint id (``thread_checkpoints_by_id``),
  by run (``thread_checkpoints_by_run``).
- ``thread_checkpoint_records``: one row per put event (tenant, thread, version) with the
  digests of every blob that put referenced. Each put adds one reference per digest, so
  these rows are exactly what a tombstone must release: a retried put holds its own
  references until its checkpoint is removed.
- ``thread_writes``: one row per (tenant, thread, namespace, checkpoint id, task, idx).
  A write with idx ≥ 0 is inserted if absent (the first write wins); a negative (special)
  index overwrites.
- ``thread_write_records``: one row per write of each `ThreadWritesPut` (tenant, thread,
  version, slot) with its payload's digest: like the put records, what holds the blob
  references, so a write that lost to an earlier one (or was overwritten) still has its
  reference released when its checkpoint goes. No decision is ever read from a view.

`ThreadDeleted` deletes the thread's rows from all four; `ThreadCheckpointsRemoved`
deletes the listed checkpoints' rows. Re-delivery is harmless: every change is keyed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import sqlalchemy as sa

from eventlog.events.threads import (
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadDeleted,
    ThreadWritesPut,
)
from eventlog.records import RecordedEvent
from projections.changes import AT_POSITION, Change, Delete, InsertIfAbsent, Upsert
from projections.views import ID, metadata

THREAD_CHECKPOINTS = "thread_checkpoints"
THREAD_RECORDS = "thread_checkpoint_records"
THREAD_WRITES = "thread_writes"
THREAD_WRITE_RECORDS = "thread_write_records"

thread_checkpoints = sa.Table(
    THREAD_CHECKPOINTS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("thread_id", ID, primary_key=True),
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("checkpoint_id", ID, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("parent_id", ID, nullable=True),
    sa.Column("run_key", sa.Text, nullable=True),
    sa.Column("step", sa.BigInteger, nullable=True),
    sa.Column("state_encoding", ID, nullable=False),
    sa.Column("state_digest", sa.LargeBinary, nullable=False),
    sa.Column("channels", sa.Text, nullable=False),
    sa.Column("metadata", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
)
sa.Index("thread_checkpoints_by_id", thread_checkpoints.c.tenant_id,
         thread_checkpoints.c.checkpoint_id)
sa.Index("thread_checkpoints_by_run", thread_checkpoints.c.tenant_id,
         thread_checkpoints.c.run_key)

thread_checkpoint_records = sa.Table(
    THREAD_RECORDS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("thread_id", ID, primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("checkpoint_id", ID, nullable=False),
    sa.Column("digests", sa.Text, nullable=False),
)
sa.Index("thread_checkpoint_records_by_checkpoint", thread_checkpoint_records.c.tenant_id,
         thread_checkpoint_records.c.thread_id, thread_checkpoint_records.c.namespace,
         thread_checkpoint_records.c.checkpoint_id)

thread_writes = sa.Table(
    THREAD_WRITES,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("thread_id", ID, primary_key=True),
    sa.Column("namespace", sa.Text, primary_key=True),
    sa.Column("checkpoint_id", ID, primary_key=True),
    sa.Column("task_id", ID, primary_key=True),
    sa.Column("idx", sa.BigInteger, primary_key=True),
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("encoding", ID, nullable=False),
    sa.Column("digest", sa.LargeBinary, nullable=False),
    sa.Column("task_path", sa.Text, nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
)

thread_write_records = sa.Table(
    THREAD_WRITE_RECORDS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("thread_id", ID, primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True),
    sa.Column("slot", sa.BigInteger, primary_key=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("checkpoint_id", ID, nullable=False),
    sa.Column("digest", sa.LargeBinary, nullable=False),
)
sa.Index("thread_write_records_by_checkpoint", thread_write_records.c.tenant_id,
         thread_write_records.c.thread_id, thread_write_records.c.namespace,
         thread_write_records.c.checkpoint_id)

_channels_encoder = msgspec.json.Encoder()


class ThreadViews:
    """Folds thread events into the thread checkpoints, records and writes views."""

    name: str = "threads"
    tables: tuple[str, ...] = (
        THREAD_CHECKPOINTS, THREAD_RECORDS, THREAD_WRITES, THREAD_WRITE_RECORDS,
    )

    def fold(self, event: RecordedEvent) -> Sequence[Change]:
        """The view changes of one thread event; nothing for any other event."""
        value = event.event
        if isinstance(value, ThreadCheckpointPut):
            return _put(event, value)
        if isinstance(value, ThreadWritesPut):
            return _writes(event, value)
        thread = {"tenant_id": event.tenant_id}
        if isinstance(value, ThreadDeleted):
            thread["thread_id"] = value.thread_id
            return tuple(Delete(table, thread) for table in self.tables)
        if isinstance(value, ThreadCheckpointsRemoved):
            thread["thread_id"] = value.thread_id
            return tuple(
                Delete(table, {**thread, "namespace": key.namespace,
                               "checkpoint_id": key.checkpoint_id})
                for key in value.removed
                for table in self.tables
            )
        return ()


def _put(recorded: RecordedEvent, put: ThreadCheckpointPut) -> tuple[Change, ...]:
    thread = {"tenant_id": recorded.tenant_id, "thread_id": put.thread_id}
    row = {
        **thread,
        "namespace": put.namespace,
        "checkpoint_id": put.checkpoint_id,
        "version": recorded.version,
        "position": AT_POSITION,
        "parent_id": put.parent_id,
        "run_key": put.run_key,
        "step": put.step,
        "state_encoding": put.state_encoding,
        "state_digest": bytes.fromhex(put.state_digest),
        "channels": _channels_encoder.encode(put.channels).decode(),
        "metadata": msgspec.json.encode(put.metadata).decode(),
        "recorded_at": recorded.recorded_at,
    }
    digests = [put.state_digest, *(channel.digest for channel in put.channels)]
    record = {
        **thread,
        "version": recorded.version,
        "namespace": put.namespace,
        "checkpoint_id": put.checkpoint_id,
        "digests": " ".join(digests),
    }
    return (Upsert(THREAD_CHECKPOINTS, row), Upsert(THREAD_RECORDS, record))


def _writes(recorded: RecordedEvent, put: ThreadWritesPut) -> tuple[Change, ...]:
    changes: list[Change] = []
    for slot, write in enumerate(put.writes):
        row = {
            "tenant_id": recorded.tenant_id,
            "thread_id": put.thread_id,
            "namespace": put.namespace,
            "checkpoint_id": put.checkpoint_id,
            "task_id": put.task_id,
            "idx": write.idx,
            "channel": write.channel,
            "encoding": write.encoding,
            "digest": bytes.fromhex(write.digest),
            "task_path": put.task_path,
            "version": recorded.version,
        }
        changes.append(Upsert(THREAD_WRITES, row) if write.idx < 0
                       else InsertIfAbsent(THREAD_WRITES, row))
        changes.append(Upsert(THREAD_WRITE_RECORDS, {
            "tenant_id": recorded.tenant_id, "thread_id": put.thread_id,
            "version": recorded.version, "slot": slot, "namespace": put.namespace,
            "checkpoint_id": put.checkpoint_id, "digest": bytes.fromhex(write.digest),
        }))
    return tuple(changes)
