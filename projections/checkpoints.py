"""The checkpoint views: every checkpoint of a session, each session's latest, its runs.

Three tables, all keyed from ``tenant_id`` and folded from two events:

- ``checkpoints``: one row per `CheckpointCreated`, keyed by (tenant, session, version in
  the session's stream). Version order is write order (the log hands out versions), so
  listing a session needs no timestamp; duplicates written by a replayed step are simply
  further rows. Indexed for the reads the store makes: by run (tenant, run, position),
  by checkpoint id (tenant, session, checkpoint id, version) and by parent (tenant,
  session, parent, version). The state is never here, only its digest and size.
- ``checkpoint_sessions``: one row per session with the latest checkpoint's version,
  position, id, run, step, parent and metadata: the whole listed record, so ``latest``
  reads this small table (one row per session, which stays in cache) and never the
  checkpoints index, which grows with every checkpoint.
- ``checkpoint_runs``: one row per (tenant, session, run) with the run's first
  checkpoint: the order runs started in, and where each resumed from.

A `SessionDeleted` tombstone deletes the session's rows from all three tables; a later
create in that session starts a fresh history. A `SessionCheckpointsRemoved` (a retention
pass) deletes the records it names and the runs left without one; it never names the
session's latest record unless it empties the session (then it deletes as a tombstone).
Each create changes three distinct rows of three tables (plus the stream head), so on
PostgreSQL it stays one statement.

Re-delivery is harmless: a create upserts its own row (same key, same values) and the
run row is insert-if-absent; folding the whole log again in order ends where it started.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import sqlalchemy as sa

from eventlog.events.checkpoints import (
    SESSION_STREAM_PREFIX,
    CheckpointCreated,
    SessionCheckpointsRemoved,
    SessionDeleted,
)
from eventlog.records import RecordedEvent
from projections.changes import AT_POSITION, Change, Delete, Insert, InsertIfAbsent, Upsert
from projections.views import (
    ID,
    SEALED_VALUE,
    SealedRow,
    metadata,
    sealed_columns_of,
    sealed_rows_of,
)

CHECKPOINTS = "checkpoints"
SESSIONS = "checkpoint_sessions"
RUNS = "checkpoint_runs"

checkpoints = sa.Table(
    CHECKPOINTS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("session_id", ID, primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("run_id", sa.Uuid, nullable=False),
    sa.Column("checkpoint_id", ID, nullable=False),
    sa.Column("parent_id", ID, nullable=True),
    sa.Column("step", sa.BigInteger, nullable=False),
    sa.Column("state_digest", sa.LargeBinary, nullable=False),
    sa.Column("state_encoding", sa.String(16), nullable=False),
    sa.Column("state_size", sa.BigInteger, nullable=False),
    sa.Column("metadata", sa.Text, nullable=False, info=SEALED_VALUE),
    sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("subject", ID, nullable=True),
)
# Whose its sealed values are (checked as each row is read on an encrypted log).
checkpoints.info["sealed_row"] = SealedRow(SESSION_STREAM_PREFIX, "session_id", ("checkpoint_id",),
                                          "subject")
# The records that name a subject of their own (few): what a legal hold on the subject
# finds (migration 0017). Partial: a record of its session's own subject costs nothing.
sa.Index("checkpoints_by_subject", checkpoints.c.tenant_id, checkpoints.c.subject,
         postgresql_where=checkpoints.c.subject.isnot(None),
         sqlite_where=checkpoints.c.subject.isnot(None))
sa.Index("checkpoints_by_run", checkpoints.c.tenant_id, checkpoints.c.run_id,
         checkpoints.c.position)
sa.Index("checkpoints_by_checkpoint_id", checkpoints.c.tenant_id, checkpoints.c.session_id,
         checkpoints.c.checkpoint_id, checkpoints.c.version)
sa.Index("checkpoints_by_parent", checkpoints.c.tenant_id, checkpoints.c.session_id,
         checkpoints.c.parent_id, checkpoints.c.version)

checkpoint_sessions = sa.Table(
    SESSIONS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("session_id", ID, primary_key=True),
    sa.Column("latest_version", sa.BigInteger, nullable=False),
    sa.Column("latest_position", sa.BigInteger, nullable=False),
    sa.Column("latest_checkpoint_id", ID, nullable=False),
    sa.Column("latest_run_id", sa.Uuid, nullable=False),
    sa.Column("latest_step", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("latest_parent_id", ID, nullable=True),
    sa.Column("latest_metadata", sa.Text, nullable=False, server_default="{}",
              info=SEALED_VALUE),
)
# Whose its sealed values are (checked as each row is read on an encrypted log).
checkpoint_sessions.info["sealed_row"] = SealedRow(SESSION_STREAM_PREFIX, "session_id",
                                                  ("latest_checkpoint_id",))

checkpoint_runs = sa.Table(
    RUNS,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("session_id", ID, primary_key=True),
    sa.Column("run_id", sa.Uuid, primary_key=True),
    sa.Column("first_version", sa.BigInteger, nullable=False),
    sa.Column("first_position", sa.BigInteger, nullable=False),
    sa.Column("first_checkpoint_id", ID, nullable=False),
    sa.Column("first_parent_id", ID, nullable=True),
    sa.Column("first_step", sa.BigInteger, nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
)


class CheckpointViews:
    """Folds checkpoint events into the checkpoints, sessions and runs views."""

    name: str = "checkpoints"
    tables: tuple[str, ...] = (CHECKPOINTS, SESSIONS, RUNS)
    sealed_columns = sealed_columns_of(checkpoints, checkpoint_sessions)
    sealed_rows = sealed_rows_of(checkpoints, checkpoint_sessions)

    def fold(self, event: RecordedEvent) -> Sequence[Change]:
        """Three upserts for a create, three deletes for a tombstone, nothing otherwise."""
        if isinstance(event.event, CheckpointCreated):
            return _created(event, event.event)
        if isinstance(event.event, SessionDeleted):
            where = {"tenant_id": event.tenant_id, "session_id": event.event.session_id}
            return (Delete(CHECKPOINTS, where), Delete(SESSIONS, where), Delete(RUNS, where))
        if isinstance(event.event, SessionCheckpointsRemoved):
            return _removed(event.tenant_id, event.event)
        return ()


def _removed(tenant_id: str, removed: SessionCheckpointsRemoved) -> tuple[Change, ...]:
    """One delete per removed record and per run left without one; the session's row
    too when none remains."""
    where = {"tenant_id": tenant_id, "session_id": removed.session_id}
    if removed.emptied:
        return (Delete(CHECKPOINTS, where), Delete(SESSIONS, where), Delete(RUNS, where))
    return (
        *(Delete(CHECKPOINTS, {**where, "version": version}) for version in removed.versions),
        *(Delete(RUNS, {**where, "run_id": run}) for run in removed.runs),
    )


def _created(recorded: RecordedEvent, created: CheckpointCreated) -> tuple[Change, ...]:
    session = {"tenant_id": recorded.tenant_id, "session_id": created.session_id}
    metadata_text = msgspec.json.encode(created.metadata).decode()
    row = {
        **session,
        "version": recorded.version,
        "position": AT_POSITION,
        "run_id": created.run_id,
        "checkpoint_id": created.checkpoint_id,
        "parent_id": created.parent_id,
        "step": created.step,
        "state_digest": bytes.fromhex(created.state_digest),
        "state_encoding": created.state_encoding,
        "state_size": created.state_size,
        "metadata": metadata_text,
        "recorded_at": recorded.recorded_at,
        "subject": created.subject,
    }
    latest = {
        **session,
        "latest_version": recorded.version,
        "latest_position": AT_POSITION,
        "latest_checkpoint_id": created.checkpoint_id,
        "latest_run_id": created.run_id,
        "latest_step": created.step,
        "updated_at": recorded.recorded_at,
        "latest_parent_id": created.parent_id,
        "latest_metadata": metadata_text,
    }
    run = {
        **session,
        "run_id": created.run_id,
        "first_version": recorded.version,
        "first_position": AT_POSITION,
        "first_checkpoint_id": created.checkpoint_id,
        "first_parent_id": created.parent_id,
        "first_step": created.step,
        "started_at": recorded.recorded_at,
    }
    # The checkpoint's row is keyed by its event's version: new whenever its event is.
    return (Insert(CHECKPOINTS, row), Upsert(SESSIONS, latest), InsertIfAbsent(RUNS, run))
