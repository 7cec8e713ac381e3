"""The interrupt view: one row per batch, a pure fold of the batch's events.

Each batch event changes exactly one row of ``interrupt_batches`` (an upsert on creation,
an update afterwards, a delete on retirement), so every interrupt append stays on
PostgreSQL's one-statement path. ``version`` is the batch stream's version after the
event: the store decides against it and appends with it as ``expected_version``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec
import sqlalchemy as sa

from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.records import RecordedEvent
from projections.changes import AT_POSITION, Change, Delete, Update, Upsert
from projections.views import (
    ID,
    SealedRow,
    metadata,
    sealed_columns_of,
    sealed_rows_of,
)

BATCHES = "interrupt_batches"
"""One row per interrupt batch."""

TABLE = BATCHES

interrupt_batches = sa.Table(
    TABLE,
    metadata,
    sa.Column("tenant_id", ID, primary_key=True),
    sa.Column("batch_id", ID, primary_key=True),
    sa.Column("thread_id", ID, nullable=False),
    sa.Column("checkpoint_id", ID, nullable=False),
    sa.Column("operation_name", ID, nullable=False),
    sa.Column("operation_version", ID, nullable=False),
    sa.Column("state", sa.String(32), nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("generation", sa.BigInteger, nullable=False),
    sa.Column("token_digest", sa.String(64), nullable=True),
    sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
    sa.Column("approval_expires_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("effect_started", sa.Boolean, nullable=False),
    sa.Column("effect_generation", sa.BigInteger, nullable=True),
    sa.Column("capture_id", sa.String(64), nullable=True),
    sa.Column("capture_generation", sa.BigInteger, nullable=True),
    sa.Column("capture_state", sa.String(32), nullable=True),
    sa.Column("resolution", sa.String(32), nullable=True),
    sa.Column("reconciled_by", ID, nullable=True),
    # The batch's interrupts (JSON), each one's sealed message and metadata as sealed.
    sa.Column("descriptor", sa.LargeBinary, nullable=False,
              info={"sealed": (("*", "message"), ("*", "metadata"))}),
    sa.Column("created_position", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_position", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
# Whose its sealed values are (checked as each row is read on an encrypted log).
interrupt_batches.info["sealed_row"] = SealedRow(ev.BATCH_STREAM_PREFIX, "batch_id", ("batch_id",))
sa.Index("interrupt_batches_list", interrupt_batches.c.tenant_id,
         interrupt_batches.c.created_position)
sa.Index("interrupt_batches_state", interrupt_batches.c.tenant_id, interrupt_batches.c.state,
         interrupt_batches.c.created_position)
sa.Index("interrupt_batches_thread", interrupt_batches.c.tenant_id,
         interrupt_batches.c.thread_id, interrupt_batches.c.created_position)
sa.Index("interrupt_batches_lease", interrupt_batches.c.state,
         interrupt_batches.c.lease_expires_at)
sa.Index("interrupt_batches_approval", interrupt_batches.c.state,
         interrupt_batches.c.approval_expires_at)
sa.Index("interrupt_batches_updated", interrupt_batches.c.state,
         interrupt_batches.c.updated_at)
sa.Index("interrupt_batches_capture", interrupt_batches.c.capture_state,
         interrupt_batches.c.updated_at)

_encoder = msgspec.json.Encoder()


def encode_descriptor(interrupts: Sequence[Any]) -> bytes:
    """The bytes a row holds for its batch's interrupts."""
    return _encoder.encode(tuple(interrupts))


class InterruptBatches:
    """Folds interrupt batch events into ``interrupt_batches``."""

    name: str = BATCHES
    tables: tuple[str, ...] = (TABLE,)
    sealed_columns = sealed_columns_of(interrupt_batches)
    sealed_rows = sealed_rows_of(interrupt_batches)

    def fold(self, event: RecordedEvent) -> Sequence[Change]:
        """The one change a batch event makes to its row (nothing for other events)."""
        handler = _HANDLERS.get(type(event.event))
        if handler is None:
            return ()
        key = {"tenant_id": event.tenant_id, "batch_id": event.event.batch_id}  # type: ignore[attr-defined]
        values = handler(event.event)
        if values is None:
            return (Delete(TABLE, key),)
        stamp = {"version": event.version, "updated_position": AT_POSITION,
                 "updated_at": event.recorded_at}
        if isinstance(event.event, ev.BatchCreated):
            row = {**key, **values, **stamp, "created_position": AT_POSITION,
                   "created_at": event.recorded_at}
            return (Upsert(TABLE, row),)
        return (Update(TABLE, key, {**values, **stamp}),)


def _created(event: ev.BatchCreated) -> dict[str, Any]:
    return {
        "thread_id": event.thread_id, "checkpoint_id": event.checkpoint_id,
        "operation_name": event.operation_name, "operation_version": event.operation_version,
        "state": "pending", "generation": 0, "token_digest": None, "lease_expires_at": None,
        "approval_expires_at": event.approval_expires_at, "effect_started": False,
        "effect_generation": None, "capture_id": None, "capture_generation": None,
        "capture_state": None, "resolution": None, "reconciled_by": None,
        "descriptor": encode_descriptor(event.interrupts),
    }


def _claimed(event: ev.BatchClaimed) -> dict[str, Any]:
    return {"state": "claimed", "generation": event.generation,
            "token_digest": event.token_digest, "lease_expires_at": event.lease_expires_at}


def _capture_started(event: ev.CaptureStarted) -> dict[str, Any]:
    return {"capture_id": event.capture_id, "capture_generation": event.generation,
            "capture_state": "running"}


def _capture_completed(event: ev.CaptureCompleted) -> dict[str, Any]:
    return {"capture_state": event.outcome}


def _effect_started(event: ev.EffectStarted) -> dict[str, Any]:
    return {"state": "effect_started", "effect_started": True,
            "effect_generation": event.generation}


def _claim_ended(state: str) -> Callable[[Event], dict[str, Any]]:
    def values(_event: Event) -> dict[str, Any]:
        return {"state": state, "token_digest": None, "lease_expires_at": None}

    return values


def _capture_abandoned(_event: ev.CaptureAbandoned) -> dict[str, Any]:
    return {"capture_state": "abandoned"}


def _reconciled(event: ev.BatchReconciled) -> dict[str, Any]:
    return {"state": "reconciled", "token_digest": None, "lease_expires_at": None,
            "resolution": event.resolution, "reconciled_by": event.actor}


def _retired(_event: ev.BatchRetired) -> None:
    return None


_HANDLERS: dict[type[Event], Callable[[Any], dict[str, Any] | None]] = {
    ev.BatchCreated: _created,
    ev.BatchClaimed: _claimed,
    ev.CaptureStarted: _capture_started,
    ev.CaptureCompleted: _capture_completed,
    ev.EffectStarted: _effect_started,
    ev.BatchFinalized: _claim_ended("finalized"),
    ev.BatchReleased: _claim_ended("pending"),
    ev.ClaimExpired: _claim_ended("pending"),
    ev.EffectUnresolved: _claim_ended("unresolved"),
    ev.ApprovalExpired: _claim_ended("expired"),
    ev.CaptureAbandoned: _capture_abandoned,
    ev.BatchReconciled: _reconciled,
    ev.BatchRetired: _retired,
}


def batch_state(events: Iterable[Event]) -> tuple[str, str] | None:
    """A batch's thread id and state after its events (in stream order), by the fold its
    view row is made by; None for a batch retired, or with no `BatchCreated`. What
    retention decides an open batch from, reading the batch's signed events rather than
    its row (which the database administrator can set to anything)."""
    row: dict[str, Any] | None = None
    for event in events:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            continue
        values = handler(event)
        if values is None:
            return None
        if isinstance(event, ev.BatchCreated):
            row = dict(values)
        elif row is not None:
            row.update(values)
    return None if row is None else (row["thread_id"], row["state"])
