"""What the log hands back: recorded events, append results, pages of the log."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
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


class EventEnvelope(msgspec.Struct, frozen=True):
    """The twelve fields every event of the log carries, in one order: a storage row read
    in this order builds one positionally.

    ``position`` is the event's place in the whole log; ``version`` its place in its
    stream (1, 2, 3 …). ``data`` are the exact bytes the hash chain covers. ``actor`` is
    the principal who appended the event (`open_log(actor=...)`, `EventLog.acting_as`),
    covered by the chain too; None means none was given (never a guess). ``signature``
    is the application's writer key's signature of the event's ``hash`` (the key's 8-byte
    id, then the 64-byte Ed25519 signature: `eventlog.event_signing`); None for an event
    appended without a writer key (before signing began).
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
    actor: str | None = None
    signature: bytes | None = None


ENVELOPE_SIZE: Final = len(EventEnvelope.__struct_fields__)
"""How many fields `EventEnvelope` has (the first fields of its subclasses)."""


class StoredEvent(EventEnvelope, frozen=True, kw_only=True, gc=False):
    """One row of the log exactly as stored, before its data is decoded."""

    damage: str | None = None
    """Why the row could not be read as written (a column of the wrong type or format,
    changed behind the log's back); its unreadable fields then hold placeholders. `verify`
    reports such a row, and decoding it raises `CorruptEvent`."""


class RecordedEvent(EventEnvelope, frozen=True, kw_only=True, gc=True):
    """One event as the log recorded it: its envelope, exact stored bytes and decoded value."""

    event: Event

    @classmethod
    def of(cls, stored: StoredEvent, event: Event) -> RecordedEvent:
        """``stored``'s envelope with its decoded ``event``: the one conversion."""
        return cls(*msgspec.structs.astuple(stored)[:ENVELOPE_SIZE], event=event)


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one append: the stream's new version and the positions assigned."""

    stream_id: str
    version: int
    positions: tuple[int, ...]
    event_ids: tuple[uuid.UUID, ...]
    recorded_at: datetime
    """The time recorded on every event of the append."""


class StreamAppend(msgspec.Struct, frozen=True, kw_only=True):
    """One stream's part of a batched append (`EventLog.append_batch`).

    The same arguments as `EventLog.append` takes for one stream: the events, the version
    the stream must be at (`ANY` appends at the end), blob payloads to attach and blob
    references to release.
    """

    tenant_id: str
    stream_id: str
    events: Sequence[Event]
    expected_version: int | ExpectedVersion = ExpectedVersion.ANY
    attach: Sequence[bytes] = ()
    release: Mapping[bytes, int] | None = None


class LogPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of the log in log order, and the opaque cursor to continue after it.

    Pass ``cursor`` back as ``read_all(after=cursor)``; an empty page returns the cursor it
    was given, so a follower can poll with it until new events commit.
    """

    events: list[RecordedEvent]
    cursor: str | None


class StreamProblem(msgspec.Struct, frozen=True, kw_only=True):
    """The first thing found wrong with one stream's hash chain, or with one state blob
    (then ``blob`` is set)."""

    tenant_id: str
    stream_id: str
    version: int
    kind: str
    """One of ``broken_link``, ``hash_mismatch``, ``missing_version``, ``truncated``,
    ``head_mismatch``, ``wrong_stream``, ``forged`` (a signature that is not a writer
    key's signature of the event's hash, or of a key not given), ``unsigned`` (no
    signature, after a signed event of its stream or past its tenant's first signed
    event: each such event is reported, its chain checked on), ``undecodable_event`` (an
    event of a type the registry knows whose bytes do not decode as it; each one is
    reported, and its stream's chain is still checked), ``unread_events`` (the scan read
    fewer of a tenant's events than the storage counted before it began; ``stream_id`` is
    empty and ``version`` 0), ``key_restored`` (the key table holds a data key of a
    generation the subject's erasure stream erased, e.g. written back from a backup;
    ``stream_id`` is that ``erasure:<subject>`` stream, ``version`` its erasure event; the
    log refuses the key as erased), or a state blob's ``blob_missing``, ``blob_corrupt``,
    ``blob_refs`` (``blob`` names it, ``stream_id`` the first stream referencing it,
    ``version`` 0)."""
    detail: str
    blob: str | None = None
    """A blob problem's digest (hex); None for a stream's."""
    streams: tuple[str, ...] = ()
    """A blob problem's streams whose events reference the blob, first named first."""


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """What `EventLog.verify` checked and what it found."""

    streams: int
    events: int
    problems: list[StreamProblem]
    blobs: int = 0
    """State blobs checked (stored, or referenced by live events)."""
    withheld_blobs: int = 0
    """Blobs the events reference that an import recorded as withheld (`StateWithheld`):
    absent by intent, a notice rather than a problem."""
    signed_events: int = 0
    """Events carrying a writer signature (checked when ``signatures_checked``)."""
    signing_starts: dict[str, int] = {}
    """Per tenant, the position of its first signed event: from there on every event must
    be signed (tenants without one are left out; their events verify as before)."""
    signatures_checked: bool = False
    """Whether signatures were checked against a writer public key. False: no key was
    known (``forged`` cannot be found then; ``unsigned`` still is)."""

    @property
    def ok(self) -> bool:
        """True when no stream and no blob has a problem."""
        return not self.problems


class ConsumerInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A durable consumer as `EventLog.consumers` reports it: its scope, position, holder
    and how far behind the log it is."""

    name: str
    tenant_id: str | None
    """The one tenant it reads, or None for the whole log."""
    types: tuple[str, ...] | None
    """The event types it is delivered, or None for every type."""
    cursor: str | None
    """The cursor after its last acknowledged event (None: it has acknowledged none)."""
    holder: str | None
    """Who holds it (None when nobody does, or the holder's lease has expired)."""
    lease_until: datetime | None
    token: int
    """The fencing token of the latest claim or reset."""
    updated_at: datetime
    lag_events: int
    """Events of its scope after its position (counted up to `lag_limit`)."""
    lag_seconds: float
    """How long the oldest of those events has waited, in seconds (0 when caught up)."""
    lag_limit: int
    """The most events counted: ``lag_events == lag_limit`` means at least that many."""
    problem: str | None = None
    """Why its row is refused (``unsigned: ...``, ``forged: ...``, ``unreadable: ...``;
    opening it raises `ConsumerTampered`), its lag then not counted; None when it is
    the application's row."""
