"""The thread views: each checkpoint of a thread by id, its channel values and its writes.

Three tables, keyed from ``tenant_id``, folded from the events of
`eventlog.events.threads`:

- ``thread_checkpoints``: one row per (tenant, thread, namespace, checkpoint id), the
  latest put of that id (a put of an existing id overwrites the row, so a retried put
  never adds a row), with the version of each channel value it carries. Reads: newest
  first by checkpoint id within a thread and namespace (the primary key), within a thread
  across its namespaces (the primary key's main namespace merged with
  ``thread_checkpoints_by_thread``, which holds the other namespaces); by run in any thread
  (``thread_checkpoints_by_run``, of the rows with a run key only, migration 0031: Agent
  Framework's load by id, whose run key is the id, and ``delete_runs``). No index leads
  with the checkpoint id (migration 0029): a search by id in any thread
  (`eventlog.checkpoints.threads.ThreadCheckpoints.find`) reads the tenant's rows, and a
  put writes one index entry fewer.
- ``thread_channel_values``: one row per (tenant, thread, namespace, channel version,
  channel): the value's blob, stored by the first put that carried it (later puts of the
  same version change nothing), so an unchanged channel is stored once. Read by key
  only (a `projections.query.Lookup` of the versions a checkpoint names).
- ``thread_writes``: one row per (tenant, thread, namespace, checkpoint id, task, idx).
  A write with idx ≥ 0 is inserted if absent (the first write wins); a negative (special)
  index overwrites.

What each put, value and write holds a blob reference for is not a table: a removal
folds it from the thread's events (`projections.thread_holdings`; the three record
tables every put used to write went in migration 0025).

`ThreadDeleted` deletes the thread's rows from all three; `ThreadCheckpointsRemoved`
deletes the listed checkpoints' rows (with their writes) and the listed values'.
Re-delivery is harmless: every change is keyed.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import sqlalchemy as sa

from eventlog.events.threads import (
    THREAD_STREAM_PREFIX,
    BlobRef,
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadDeleted,
    ThreadWritesPut,
)
from eventlog.records import RecordedEvent
from projections.changes import AT_POSITION, Change, Delete, InsertIfAbsent, Upsert
from projections.views import (
    ID,
    SEALED_VALUE,
    SealedRow,
    metadata,
    sealed_columns_of,
    sealed_rows_of,
)

THREAD_CHECKPOINTS = "thread_checkpoints"
THREAD_WRITES = "thread_writes"
THREAD_VALUES = "thread_channel_values"

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
    sa.Column("metadata", sa.Text, nullable=False, info=SEALED_VALUE),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("subject", ID, nullable=True),
)
# Whose its sealed values are (checked as each row is read on an encrypted log).
thread_checkpoints.info["sealed_row"] = SealedRow(
    THREAD_STREAM_PREFIX, "thread_id", ("namespace", "checkpoint_id"), "subject")
sa.Index("thread_checkpoints_by_subject", thread_checkpoints.c.tenant_id,
         thread_checkpoints.c.subject, postgresql_where=thread_checkpoints.c.subject.isnot(None),
         sqlite_where=thread_checkpoints.c.subject.isnot(None))
# Led by the run, not the tenant: a read of one thread fixes the tenant and the thread,
# and on tables without statistics PostgreSQL read it through an index led by the tenant,
# filtering out the tenant's other threads (migration 0024). The index led by the
# checkpoint id beside it went in migration 0029: no hot read used it (Agent Framework's
# load by id reads by run: its run key is the id), and every put wrote an entry into it.
# Only the rows with a run key (migration 0031): a put without one (LangGraph invoked
# without a run id) wrote a NULL entry no read could find; the reads' ``run_key =`` and
# ``run_key IN`` imply the predicate on both databases.
_KEYED = thread_checkpoints.c.run_key.isnot(None)
sa.Index("thread_checkpoints_by_run", thread_checkpoints.c.run_key,
         thread_checkpoints.c.tenant_id, postgresql_where=_KEYED, sqlite_where=_KEYED)
# A page across a thread's namespaces merges the main graph's rows (namespace '', read
# through the primary key) with the subgraphs' (through this index: `ViewQuery.split`),
# so it holds only the subgraphs' rows and a main-graph put writes no entry into it
# (migration 0027). Its predicate is the one the page's second half says, word for word.
_SUBGRAPHS = sa.func.length(thread_checkpoints.c.namespace) > 0
sa.Index("thread_checkpoints_by_thread", thread_checkpoints.c.tenant_id,
         thread_checkpoints.c.thread_id, thread_checkpoints.c.checkpoint_id,
         postgresql_where=_SUBGRAPHS, sqlite_where=_SUBGRAPHS)

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

thread_channel_values = sa.Table(
    THREAD_VALUES,
    metadata,
    sa.Column("tenant_id", ID, nullable=False),
    sa.Column("thread_id", ID, nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("channel_version", sa.Text, nullable=False),
    sa.Column("encoding", ID, nullable=False),
    sa.Column("digest", sa.LargeBinary, nullable=False),
    # The version before the channel (migration 0028): LangGraph gives every channel a
    # step changes the same new version, which grows step by step, so a put's rows sit
    # side by side at the end of the thread's range, on one leaf, where ordered by
    # channel first each went to its channel's own leaf (4.3 SQLite pages a chat put).
    sa.PrimaryKeyConstraint("tenant_id", "thread_id", "namespace", "channel_version",
                            "channel", name="thread_channel_values_pkey"),
)

_versions_encoder = msgspec.json.Encoder()

CHECKPOINT_TABLES = (THREAD_CHECKPOINTS, THREAD_WRITES)
"""The tables whose rows belong to one checkpoint (namespace, checkpoint id)."""
VALUE_TABLES = (THREAD_VALUES,)
"""The tables whose rows belong to one stored value (namespace, channel, version)."""


class ThreadViews:
    """Folds thread events into the thread checkpoints, values and writes views."""

    name: str = "threads"
    tables: tuple[str, ...] = CHECKPOINT_TABLES + VALUE_TABLES
    sealed_columns = sealed_columns_of(thread_checkpoints)
    sealed_rows = sealed_rows_of(thread_checkpoints)

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
            # Table by table (deletes commute): a table's deletes follow one another, so
            # PostgreSQL sends them as one pipelined run (`_run_statements`).
            return (*(
                Delete(table, {**thread, "namespace": key.namespace,
                               "checkpoint_id": key.checkpoint_id})
                for table in CHECKPOINT_TABLES
                for key in value.removed
            ), *(
                Delete(table, {**thread, "namespace": key.namespace, "channel": key.channel,
                               "channel_version": key.version})
                for table in VALUE_TABLES
                for key in value.values
            ))
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
        "channels": _versions_encoder.encode(put.versions).decode(),
        "metadata": msgspec.json.encode(put.metadata).decode(),
        "recorded_at": recorded.recorded_at,
        "subject": put.subject,
    }
    return (Upsert(THREAD_CHECKPOINTS, row),
            *_values(recorded, put.thread_id, put.namespace, put.channels))


def _values(
    recorded: RecordedEvent, thread_id: str, namespace: str, stored: list[BlobRef]
) -> tuple[Change, ...]:
    return tuple(
        InsertIfAbsent(THREAD_VALUES, {
            "tenant_id": recorded.tenant_id, "thread_id": thread_id, "namespace": namespace,
            "channel": ref.name, "channel_version": ref.channel_version,
            "encoding": ref.encoding, "digest": bytes.fromhex(ref.digest),
        })
        for ref in stored
    )


def _writes(recorded: RecordedEvent, put: ThreadWritesPut) -> tuple[Change, ...]:
    changes: list[Change] = []
    for write in put.writes:
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
    return tuple(changes)
