"""What one append hands a backend (`AppendRequest` of `PendingEvent`s), and the one
signal a backend raises back (`StreamVersionTaken`).
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec

from eventlog.errors import InvalidInput
from eventlog.hashing import uncounted
from projections.changes import Change
from projections.query import RowRequired


class PendingEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event the log has fully prepared (version, time, hashes), awaiting its position."""

    event_id: uuid.UUID
    version: int
    recorded_at: Any  # datetime; typed loosely so the struct stays cheap to build
    type: str
    data: bytes
    prev_hash: bytes
    hash: bytes
    actor: str | None = None
    """Who appended the event (None: not given); stored in the ``actor`` column."""
    signature: bytes | None = None
    """The writer key's signature of ``hash`` (key id, then signature; None: unsigned);
    stored in the ``signature`` column as given."""


class AppendRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one append commits together.

    ``changes`` pairs each view change with the index (into ``events``) of the event that
    produced it, so `AT_POSITION` can be resolved. ``blob_adds`` maps a digest to its bytes
    and how many new references this append makes to it; ``blob_releases`` maps a digest to
    how many references this append drops (a blob whose count reaches zero is deleted).
    A blob of at most `TOLD_BY_DIGEST` bytes is never counted: its count is 0 here (store
    it if absent, change nothing if stored), a release of it changes nothing, and it is
    never deleted (`uncounted`).
    ``required`` are view rows that must exist when the append commits (`RowRequired`):
    when one does not, the backend writes nothing and raises its ``InvalidInput``
    (`refusal`), checked inside the append's transaction (or its one statement).
    """

    tenant_id: str
    stream_id: str
    events: list[PendingEvent]
    changes: list[tuple[int, Change]]
    blob_adds: dict[bytes, tuple[bytes, int]] = {}
    blob_releases: dict[bytes, int] = {}
    required: tuple[RowRequired, ...] = ()


def counted_adds(blob_adds: dict[bytes, tuple[bytes, int]]) -> dict[bytes, tuple[bytes, int]]:
    """``blob_adds`` with the count of each `uncounted` payload set to 0."""
    if not any(uncounted(payload) for payload, _ in blob_adds.values()):
        return blob_adds
    return {digest: (payload, 0 if uncounted(payload) else count)
            for digest, (payload, count) in blob_adds.items()}


def refusal(required: RowRequired) -> InvalidInput:
    """The error an append raises when the row ``required`` names is not there."""
    return InvalidInput(required.field, required.reason)


class StreamVersionTaken(Exception):
    """Raised by `EventStorage.append` when a version it was asked to write exists, or
    when the server rolled the append back to break a deadlock (``reason`` says which).

    Internal: the log catches it, re-reads the stream head and either retries or raises
    `VersionConflict`. Nothing of the append was written.
    """

    def __init__(self, reason: str = "version_taken") -> None:
        self.reason = reason
        super().__init__(reason)
