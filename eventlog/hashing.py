"""The per-stream SHA-256 hash chain.

The hash of an event covers what the writer knows before the insert: tenant, stream,
version, event id, type, recorded time, the exact event bytes and the previous event's
hash. Never the global position, which the database assigns. Each part is length-prefixed
so that no two different envelopes can produce the same input.

An event may name its ``actor`` (the principal who appended it). The actor is a tenth
part, appended after the previous hash only when it is given: an event without an actor
hashes exactly as every event did before actors existed, so logs written then still
verify, and one with an actor cannot hash like one without (the parts are
length-prefixed, so their count is part of the input).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Protocol

GENESIS_HASH = bytes(32)
"""The ``prev_hash`` of every stream's first event."""

_DOMAIN = b"checkpoint-eventlog/chain/v1"


def event_hash(
    *,
    tenant_id: str,
    stream_id: str,
    version: int,
    event_id: uuid.UUID,
    type: str,
    recorded_at: datetime,
    data: bytes,
    prev_hash: bytes,
    actor: str | None = None,
) -> bytes:
    """The chain hash of one event (``actor``: who appended it, None when not given)."""
    digest = hashlib.sha256()
    for part in (
        _DOMAIN,
        tenant_id.encode(),
        stream_id.encode(),
        str(version).encode(),
        event_id.bytes,
        type.encode(),
        str(to_micros(recorded_at)).encode(),
        data,
        prev_hash,
        *(() if actor is None else (actor.encode(),)),
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()


class Envelope(Protocol):
    """A stored event's hashed fields (a `StoredEvent` or `RecordedEvent` is one)."""

    @property
    def tenant_id(self) -> str: ...
    @property
    def stream_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def event_id(self) -> uuid.UUID: ...
    @property
    def type(self) -> str: ...
    @property
    def recorded_at(self) -> datetime: ...
    @property
    def data(self) -> bytes: ...
    @property
    def prev_hash(self) -> bytes: ...
    @property
    def actor(self) -> str | None: ...


def recompute_hash(stored: Envelope) -> bytes:
    """The chain hash a stored event should carry, recomputed from its stored fields."""
    return event_hash(
        tenant_id=stored.tenant_id, stream_id=stored.stream_id, version=stored.version,
        event_id=stored.event_id, type=stored.type, recorded_at=stored.recorded_at,
        data=stored.data, prev_hash=stored.prev_hash, actor=stored.actor,
    )


def to_micros(moment: datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND  # exact: a timedelta counts whole microseconds


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def content_digest(payload: bytes) -> bytes:
    """The SHA-256 digest that content-addresses a blob."""
    return hashlib.sha256(payload).digest()


TOLD_BY_DIGEST = 3
"""The most bytes a blob may hold and be told by its digest alone: the events keep the
digest of every value they name (the chain covers it), and whoever holds one can find a
payload of three bytes or fewer by hashing every candidate (16.8 million, about a second).
Deleting such a blob would erase nothing the trail does not still tell, so it is stored
once per tenant, never reference-counted and never purged: the counters, token counts,
booleans, nulls and empty values a graph changes at every step cost no count update each
time a checkpoint names them again (docs/decisions/storage.md, "Values the digest
tells"). Sealed payloads (an encrypted log) are always longer, so the rule never applies
to them."""


def uncounted(payload: bytes) -> bool:
    """Whether a blob of these bytes is never counted nor purged (`TOLD_BY_DIGEST`)."""
    return len(payload) <= TOLD_BY_DIGEST
