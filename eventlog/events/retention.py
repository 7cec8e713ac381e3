"""The events of retention and legal holds (no store is loaded to import them). Tags are
stored forever: never rename one.

Every one of them goes to the tenant's stream ``retention``: the holds placed and released
(the tenant's holds are the fold of that stream), each batch a retention pass purged, and
each pass's summary. A pass appends each batch fenced on that stream's version, so a hold
placed while a pass runs makes the pass's next batch decide again, with the hold.

Registered in `eventlog.default_registry` when this module is imported; `eventlog.log`
imports it, so every log can decode them.
"""

from __future__ import annotations

import msgspec

from eventlog.events import Event, register_event

RETENTION_STREAM = "retention"
"""The one stream of each tenant that holds its legal holds and retention passes."""


class _OnRetentionStream(Event, frozen=True, kw_only=True):
    def home_stream(self) -> str | None:
        """The tenant's retention stream."""
        return RETENTION_STREAM


@register_event
class LegalHoldPlaced(_OnRetentionStream, tag="legal_hold_placed", frozen=True, kw_only=True):
    """A subject was put under legal hold: no retention pass purges its records until
    the hold is released. A subject is a session id or a thread id (both, if both exist)."""

    subject: str
    reason: str = ""


@register_event
class LegalHoldReleased(_OnRetentionStream, tag="legal_hold_released", frozen=True,
                        kw_only=True):
    """A subject's legal hold was released: retention applies to it again."""

    subject: str
    reason: str = ""


class RetentionRule(msgspec.Struct, frozen=True, kw_only=True):
    """A retention policy as an event records it: keep records younger than
    ``older_than_days`` days and/or the latest ``keep_latest`` per session, and per
    namespace of a thread. A record is purged only when every rule given lets it go."""

    older_than_days: float | None = None
    keep_latest: int | None = None


class PurgedStream(msgspec.Struct, frozen=True, kw_only=True):
    """What one batch of a pass purged from one session or thread."""

    kind: str
    """``session`` or ``thread``."""
    id: str
    checkpoints: list[str]
    """The purged checkpoint ids (a thread's as ``namespace/id`` when the namespace is not
    empty); a session may repeat an id (at-least-once records)."""
    emptied: bool = False
    """Nothing of the session or thread remains."""


@register_event
class RetentionPurged(_OnRetentionStream, tag="retention_purged", frozen=True, kw_only=True):
    """One batch of a retention pass: the streams it purged, in the same transaction as
    their tombstones (`SessionCheckpointsRemoved`, `ThreadCheckpointsRemoved`,
    `ThreadDeleted`), which name the blob references released."""

    pass_id: str
    policy: RetentionRule
    streams: list[PurgedStream]
    released: int = 0
    """Blob references the batch's tombstones gave up."""


@register_event
class RetentionApplied(_OnRetentionStream, tag="retention_applied", frozen=True,
                       kw_only=True):
    """A retention pass ended: its policy, the time its cutoff was taken from (the
    injected clock), what it purged in all, and what it kept and why."""

    pass_id: str
    policy: RetentionRule
    now: str
    """The pass's time (ISO 8601, UTC): ``older_than_days`` counts back from it."""
    checkpoints: int
    sessions: int
    threads: int
    batches: int
    released: int
    """Blob references given up (a blob no retained record references is deleted)."""
    blobs_purged: int = 0
    """Blobs that were deleted (their last reference was given up)."""
    held: list[str] = msgspec.field(default_factory=list)
    """Subjects under legal hold that had records the policy would have purged."""
    open_batches: list[str] = msgspec.field(default_factory=list)
    """Sessions and threads kept whole for an open interrupt batch or unresolved effect."""
    skipped: list[str] = msgspec.field(default_factory=list)
    """Streams a writer kept busy past the pass's tries (the next pass takes them)."""
    expired_subjects: list[str] = msgspec.field(default_factory=list)
    """Subjects none of whose records remain (what erasure, with a keyring, is for)."""
