"""The log's checked read side (`EventLog.signed`): a stream's events as a decision may use
them, each one's chain link and writer signature checked as it is read.

The database administrator can write any row, and the chain is unkeyed: a correctly
chained row is only the application's if the writer key signed it. So whatever decides
from the log (retention's legal holds; open batches, erasure state and consumers' fencing
as they come to use it) reads the stream it decides from through `SignedReads`, never a
view row, and a row that is not the application's raises `ForgedEvent` instead of being
obeyed. The rules, which `verify` applies to every stream too (`signature_finding`):

- versions run 1, 2, 3 …; each event's ``prev_hash`` is the previous event's hash and its
  stored bytes hash to its hash (``broken_chain`` otherwise);
- a signed event's signature must be a writer key's signature of its hash (``forged``);
  checked whenever the log knows a writer public key (its keyring's, or ``writer_keys=``);
- an unsigned event is refused (``unsigned``) after a signed event of its stream, or (when
  the log knows a writer key) when its position comes after the tenant's first signed
  event: signing had begun there.

An event written before signing began (by a log without a writer key: a log written
before signed appends existed) passes, so such a log decides as it always did and is
held to signatures from its first signed event on. What this cannot tell: a row the
administrator inserts unsigned, at a position chosen before that first signed event, into
a stream no signed event has extended; `verify` cannot either. Signed tree heads held by
witnesses pin the events before them (docs/decisions/transparency.md, "Signed appends").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NamedTuple, Protocol

from eventlog.errors import ForgedEvent
from eventlog.hashing import GENESIS_HASH, recompute_hash
from eventlog.records import EventEnvelope, RecordedEvent, StoredEvent
from eventlog.writer_keys import WriterKeys

_PAGE = 500
"""Events read per query."""


class _Reader(Protocol):
    """What the checked reads need of the log's storage."""

    async def read_stream(self, tenant_id: str, stream_id: str, from_version: int,
                          limit: int) -> list[StoredEvent]: ...

    async def signing_starts(self, tenant_id: str | None) -> dict[str, int]: ...

    def scan_streams(self, tenant_id: str | None, prefix: str = ""
                     ) -> AsyncIterator[StoredEvent]: ...


def signature_finding(
    keys: WriterKeys | None, event: EventEnvelope, *, signed_before: bool, start: int | None
) -> tuple[str, str] | None:
    """Whether ``event`` is the application's as far as its signature tells: None when it
    is (or when ``keys`` is None and it is signed: unchecked), else ``(reason, detail)``
    with reason ``forged`` or ``unsigned``. ``signed_before``: an earlier event of its
    stream is signed; ``start``: the position of its tenant's first signed event."""
    if event.signature is not None:
        why = None if keys is None else keys.check(event.hash, event.signature)
        return None if why is None else ("forged", why)
    if signed_before:
        return ("unsigned", "it carries no writer signature, after signed events of its "
                            "stream")
    if start is not None and event.position > start:
        return ("unsigned", "it carries no writer signature, and its tenant's events are "
                            f"signed from position {start} on")
    return None


class StreamLink(NamedTuple):
    """Where a checked read of a stream got to: the version of the last event it checked,
    that event's hash, and whether it or an earlier event of the stream was signed (what
    checking the next event needs)."""

    version: int
    hash: bytes
    signed: bool


class SignedReads:
    """Reads of a log that check what they read (`EventLog.signed`); see the module
    docstring. ``keys`` are the writer public keys signatures are checked against (None:
    the log knows none, and signatures go unchecked: the chain and the unsigned rules
    still hold)."""

    def __init__(
        self, storage: _Reader, decode: Callable[[StoredEvent], Awaitable[RecordedEvent]],
        keys: WriterKeys | None, starts: dict[str, int],
    ) -> None:
        self.storage = storage
        self._decode = decode
        self.keys = keys
        self._starts = starts  # found starts only: shared by the log and its twins

    @property
    def checked(self) -> bool:
        """Whether signatures are checked (the log knows a writer public key)."""
        return bool(self.keys)

    async def read_stream(self, tenant_id: str, stream_id: str) -> AsyncIterator[RecordedEvent]:
        """Every event of the stream from version 1, in order, each checked (as stored,
        before it is decoded or opened) and then yielded as `EventLog.read_stream` gives
        it; `ForgedEvent` (tenant, stream, version, reason) at the first that is not the
        application's, after which nothing more is read."""
        async for stored in self.stored_stream(tenant_id, stream_id):
            yield await self._decode(stored)

    async def stored_stream(
        self, tenant_id: str, stream_id: str, through: int | None = None, *,
        after: StreamLink | None = None,
    ) -> AsyncIterator[StoredEvent]:
        """The stream's events from version 1 (or from just after ``after``, an event
        already read and checked) through ``through`` (None: all), each checked as
        `read_stream` checks it and yielded as stored (undecoded, its sealed fields as
        their markers): what a decision that needs no sealed field reads (a removal's blob
        references, `projections.thread_holdings`)."""
        previous, version, signed = (GENESIS_HASH, 0, False) if after is None else (
            after.hash, after.version, after.signed)
        while through is None or version < through:
            want = _PAGE if through is None else min(_PAGE, through - version)
            page = await self.storage.read_stream(tenant_id, stream_id, version + 1, want)
            for stored in page:
                version += 1
                await self.check(stored, version, previous, signed)
                signed |= stored.signature is not None
                previous = stored.hash
                yield stored
            if len(page) < want:
                return

    async def stored_hash(self, tenant_id: str, stream_id: str, version: int) -> bytes | None:
        """The hash stored with the stream's event ``version`` (None: there is none): what
        tells a reader that an event it checked before is still the one stored."""
        page = await self.storage.read_stream(tenant_id, stream_id, version, 1)
        return page[0].hash if page and page[0].version == version else None

    async def read_streams(self, tenant_id: str, prefix: str) -> AsyncIterator[StoredEvent]:
        """Every event of every stream of the tenant whose id starts with ``prefix``, by
        (stream, version), each checked as `read_stream` checks it and yielded as stored
        (undecoded, its sealed fields as their markers: `EventLog.decode` decodes it);
        `ForgedEvent` at the first that is not the application's. One ordered scan of
        the streams' key range, not a read per stream: what a decision about every
        stream of a kind (retention's open interrupt batches) reads."""
        stream, previous, version, signed = None, GENESIS_HASH, 0, False
        async for stored in self.storage.scan_streams(tenant_id, prefix):
            if stored.stream_id != stream:
                stream, previous, version, signed = stored.stream_id, GENESIS_HASH, 0, False
            version += 1
            await self.check(stored, version, previous, signed)
            signed |= stored.signature is not None
            previous = stored.hash
            yield stored

    async def check(self, stored: StoredEvent, version: int, previous: bytes,
                    signed: bool) -> None:
        """`ForgedEvent` unless ``stored`` is the ``version``-th event of its stream,
        linked to ``previous`` and the application's (``signed``: an earlier event is)."""
        broken = _broken(stored, version, previous)
        if broken is not None:
            raise ForgedEvent(stored.tenant_id, stored.stream_id, stored.version,
                              "broken_chain", broken)
        start = None
        if stored.signature is None and not signed and self.keys is not None:
            # Without a writer key a forger's made-up signature would pass unchecked, so
            # the tenant-wide rule is not worth its query (a scan of the tenant's rows).
            start = await self.signing_start(stored.tenant_id)
        found = signature_finding(self.keys, stored, signed_before=signed, start=start)
        if found is not None:
            raise ForgedEvent(stored.tenant_id, stored.stream_id, stored.version, *found)

    async def signing_start(self, tenant_id: str) -> int | None:
        """The position of the tenant's first signed event (None: it has none yet). Once
        found it is remembered: a later, smaller answer could only come from rows removed
        behind the log's back."""
        start = self._starts.get(tenant_id)
        if start is None:
            start = (await self.storage.signing_starts(tenant_id)).get(tenant_id)
            if start is not None:
                self._starts[tenant_id] = start
        return start


def _broken(event: StoredEvent, version: int, previous: bytes) -> str | None:
    """Why ``event`` does not continue its stream's chain, or None."""
    if event.damage is not None:
        return f"its row is not readable as written ({event.damage})"
    if event.version != version:
        return f"version {version} is missing (the next stored is {event.version})"
    if event.prev_hash != previous:
        return "its prev_hash is not the previous event's hash"
    if recompute_hash(event) != event.hash:
        return "its stored bytes do not hash to its hash"
    return None
