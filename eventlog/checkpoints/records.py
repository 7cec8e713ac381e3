"""What the checkpoint store takes and returns: records, session and run summaries."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

_metadata_decoder = msgspec.json.Decoder(dict[str, Any])


class CheckpointRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint: what `CheckpointStore.create` takes and what every read returns.

    To create, give ``tenant_id``, ``session_id``, ``run_id`` (a UUID; resuming a session
    opens a new run) and ``state`` (any JSON value, or ``bytes`` stored as they are);
    ``checkpoint_id`` is yours to pick (LangGraph, MAF Python) or left ``None`` for the
    store to mint a time-ordered UUIDv7. ``parent_id`` names the checkpoint this one
    follows in the same session. ``metadata`` is a JSON object listed with the record.
    ``subject`` (an encrypted log only) names the subject whose data key seals the state
    and metadata, e.g. a customer id shared by many sessions (default: the session id);
    it is not stored with the record, and reads return None.

    The store fills ``position`` (the record's place in the whole log: later writes have
    higher positions) and ``recorded_at`` (when the log recorded it; informational only,
    never used for ordering). Records from ``list``, ``list_by_run``, ``latest`` and
    ``index`` carry ``state=None``: those reads never load state.
    """

    tenant_id: str
    session_id: str
    run_id: uuid.UUID
    checkpoint_id: str | None = None
    parent_id: str | None = None
    step: int = 0
    state: Any
    metadata: dict[str, Any] = {}
    position: int | None = None
    recorded_at: datetime | None = None
    subject: str | None = None


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A session that has checkpoints, with its latest one (from the sessions view)."""

    tenant_id: str
    session_id: str
    latest_checkpoint_id: str
    latest_run_id: uuid.UUID
    latest_step: int
    latest_position: int
    updated_at: datetime


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One run of a session and the checkpoint it started with (from the runs view).

    ``first_parent_id`` is where the run resumed from (``None`` for a run that started
    from scratch).
    """

    tenant_id: str
    session_id: str
    run_id: uuid.UUID
    first_checkpoint_id: str
    first_parent_id: str | None
    first_step: int
    first_position: int
    started_at: datetime


RECORD_COLUMNS = (
    "session_id", "run_id", "checkpoint_id", "parent_id", "step", "metadata", "position",
    "recorded_at",
)
"""The checkpoints-view columns a listed record is built from (no state digest needed)."""


def record_from_row(tenant_id: str, row: Mapping[str, Any]) -> CheckpointRecord:
    """A listed record (``state=None``) from a row of the checkpoints view."""
    return CheckpointRecord(
        tenant_id=tenant_id,
        session_id=row["session_id"],
        run_id=_uuid(row["run_id"]),
        checkpoint_id=row["checkpoint_id"],
        parent_id=row["parent_id"],
        step=row["step"],
        state=None,
        metadata=_metadata_decoder.decode(row["metadata"]),
        position=row["position"],
        recorded_at=row["recorded_at"],
    )


LATEST_COLUMNS = (
    "session_id", "latest_run_id", "latest_checkpoint_id", "latest_parent_id", "latest_step",
    "latest_metadata", "latest_position", "updated_at",
)
"""The session-view columns the session's latest record is built from."""


def latest_from_row(tenant_id: str, row: Mapping[str, Any]) -> CheckpointRecord:
    """The session's latest record (``state=None``) from its row of the session view."""
    return record_from_row(tenant_id, {
        "session_id": row["session_id"], "run_id": row["latest_run_id"],
        "checkpoint_id": row["latest_checkpoint_id"], "parent_id": row["latest_parent_id"],
        "step": row["latest_step"], "metadata": row["latest_metadata"],
        "position": row["latest_position"], "recorded_at": row["updated_at"],
    })


def session_from_row(row: Mapping[str, Any]) -> SessionInfo:
    """A `SessionInfo` from a row of the sessions view."""
    return SessionInfo(
        tenant_id=row["tenant_id"],
        session_id=row["session_id"],
        latest_checkpoint_id=row["latest_checkpoint_id"],
        latest_run_id=_uuid(row["latest_run_id"]),
        latest_step=row["latest_step"],
        latest_position=row["latest_position"],
        updated_at=row["updated_at"],
    )


def run_from_row(row: Mapping[str, Any]) -> RunInfo:
    """A `RunInfo` from a row of the runs view."""
    return RunInfo(
        tenant_id=row["tenant_id"],
        session_id=row["session_id"],
        run_id=_uuid(row["run_id"]),
        first_checkpoint_id=row["first_checkpoint_id"],
        first_parent_id=row["first_parent_id"],
        first_step=row["first_step"],
        first_position=row["first_position"],
        started_at=row["started_at"],
    )


def _uuid(value: Any) -> uuid.UUID:
    # asyncpg hands back its own UUID subclass; records carry the standard type.
    return value if type(value) is uuid.UUID else uuid.UUID(bytes=value.bytes)
