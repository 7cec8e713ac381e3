"""What the log hands back: recorded events, append results, pages of the log."""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Final

import msgspec

from eventlog.events import Event


class ExpectedVersion(enum.Enum):
    """Special values for ``append(expected_version=...)`` besides an exact version."""

    ANY = "any"
    """Append at the end, whatever the stream's version (the default)."""
    NO_STREAM = "no_stream"
    """Append only if the stream has no events yet."""


ANY: Final = ExpectedVersion.ANY
NO_STREAM: Final = ExpectedVersion.NO_STREAM


class StoredEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the log exactly as stored, before its data is decoded."""

    position: int
    event_id: uuid.UUID
    tenant_id: str
    stream_id: str
    version: int
    recorded_at: datetime
    type: str
    data: bytes
    prev_hash: bytes
    hash: bytes
    damage: str | None = None
    """Why the row could not be read as written (a column of the wrong type or format,
    changed behind the log's back); its unreadable fields then hold placeholders. `verify`
    reports such a row, and decoding it raises `CorruptEvent`."""


class RecordedEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One event as the log recorded it: its envelope, exact stored bytes and decoded value.

    ``position`` is the event's place in the whole log; ``version`` its place in its
    stream (1, 2, 3 …). ``data`` are the exact bytes the hash chain covers.
    """

    position: int
    event_id: uuid.UUID
    tenant_id: str
    stream_id: str
    version: int
    recorded_at: datetime
    type: str
    data: bytes
    prev_hash: bytes
    hash: bytes
    event: Event


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one append: the stream's new version and the positions assigned."""

    stream_id: str
    version: int
    positions: tuple[int, ...]
    event_ids: tuple[uuid.UUID, ...]
    recorded_at: datetime
    """The time recorded on every event of the append."""


class LogPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the log in log order, and the opaque cursor to continue after it.

    Pass ``cursor`` back as ``read_all(after=cursor)``; an empty page returns the cursor it
    was given, so a follower can poll with it until new events commit.
    """

    events: list[RecordedEvent]
    cursor: str | None


class StreamProblem(msgspec.Struct, frozen=True, kw_only=True):
    """The first thing found wrong with one stream's hash chain."""

    tenant_id: str
    stream_id: str
    version: int
    kind: str
    """One of ``broken_link``, ``hash_mismatch``, ``missing_version``, ``truncated``,
    ``head_mismatch``, ``unread_events`` (the scan read fewer of a tenant's events than the
    storage counted before it began; ``stream_id`` is empty and ``version`` 0)."""
    detail: str


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """What `EventLog.verify` checked and what it found."""

    streams: int
    events: int
    problems: list[StreamProblem]

    @property
    def ok(self) -> bool:
        """True when no stream has a problem."""
        return not self.problems
