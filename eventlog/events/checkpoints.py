"""The checkpoint store's events (no store is loaded to import them). Their tags are
stored forever: never rename one.

Both are registered in `eventlog.default_registry` when this module is imported, which
happens whenever `projections` is (every log does), so a log can always decode them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from eventlog.events import SEALED, Event, record_key, register_event

SESSION_STREAM_PREFIX = "session:"
"""A session's events go to the stream ``session:<session id>``."""

HexDigest = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]
"""A SHA-256 digest as 64 lowercase hex characters (what ``sha256sum`` prints)."""


@register_event
class CheckpointCreated(Event, tag="checkpoint_created", frozen=True, kw_only=True):
    """A checkpoint was written to a session (one per `CheckpointStore.create` call).

    The state itself is a content-addressed blob attached in the same append; the event
    carries its digest, so the hash chain covers the state even after the blob is purged.
    """

    session_id: str
    run_id: uuid.UUID
    checkpoint_id: str
    parent_id: str | None = None
    step: int = 0
    state_digest: HexDigest
    state_encoding: str
    """``json`` (the blob is the state's JSON encoding) or ``bytes`` (the blob is the state)."""
    state_size: int
    metadata: Annotated[dict[str, Any], SEALED] = msgspec.field(default_factory=dict)
    subject: str | None = None
    """The subject the caller named (`CheckpointRecord.subject`: e.g. a customer id shared
    by many sessions); None when it is the session's own id. In the clear, as every id:
    what a legal hold on that subject finds the session by (`RetentionStore.hold`)."""

    def blob_digests(self) -> tuple[bytes, ...]:
        """The state blob."""
        return (bytes.fromhex(self.state_digest),)

    def home_stream(self) -> str | None:
        """The session's stream."""
        return SESSION_STREAM_PREFIX + self.session_id

    def sealed_record(self) -> str:
        """The checkpoint's record: its session's rows bind its metadata to its id."""
        return record_key(self.checkpoint_id)


@register_event
class SessionDeleted(Event, tag="session_deleted", frozen=True, kw_only=True):
    """A session's checkpoints were deleted: the tombstone.

    The events before it stay in the log (the audit trail); the views forget the session's
    checkpoints and the state blobs nothing else references are purged in the same append.
    """

    session_id: str
    checkpoints: int
    """How many checkpoint records the deletion removed from the views."""
    released: dict[HexDigest, int] = msgspec.field(default_factory=dict)
    """The state blob references the deletion gave up, by digest (empty in tombstones
    written before this field existed: those released every reference of the session)."""

    def home_stream(self) -> str | None:
        """The session's stream."""
        return SESSION_STREAM_PREFIX + self.session_id

    def blob_releases(self) -> Mapping[bytes, int] | None:
        """The references given up; None (all of the session's) for an older tombstone."""
        if not self.released and self.checkpoints:
            return None
        return {bytes.fromhex(digest): count for digest, count in self.released.items()}


@register_event
class SessionCheckpointsRemoved(Event, tag="session_checkpoints_removed", frozen=True,
                                kw_only=True):
    """Some of a session's checkpoint records were removed from the views (a retention
    pass: ``reason`` ``retention``), their state blob references given up.

    The records' events stay in the log (ids, steps, times, digests: the audit trail);
    the views forget the records at ``versions`` (their `CheckpointCreated` events'
    stream versions), the runs in ``runs`` (none of whose records remain), and with
    ``emptied`` the session itself (no record remains: as a `SessionDeleted` would).
    """

    session_id: str
    reason: str
    versions: list[int]
    checkpoint_ids: list[str] = msgspec.field(default_factory=list)
    """The removed records' checkpoint ids, in ``versions`` order (for the reader)."""
    runs: list[uuid.UUID] = msgspec.field(default_factory=list)
    emptied: bool = False
    released: dict[HexDigest, int] = msgspec.field(default_factory=dict)
    """The state blob references given up, by digest (what `verify` folds)."""

    def home_stream(self) -> str | None:
        """The session's stream."""
        return SESSION_STREAM_PREFIX + self.session_id

    def blob_releases(self) -> Mapping[bytes, int]:
        """The references given up."""
        return {bytes.fromhex(digest): count for digest, count in self.released.items()}
