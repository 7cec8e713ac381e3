"""Log digests: the head of every stream, kept outside the database by an auditor.

`verify` proves each stream's chain is intact and ends where its head row says. Someone
who can rewrite the database can rewrite the events, their hashes AND the head rows
consistently, or drop a stream altogether, and the chains still verify. A digest taken
earlier and kept elsewhere (append-only storage, a ticket, a signed email) closes that:
`check_digest` proves the log still holds every stream at least up to the digest's
version, with the same hash at that version; since each hash covers every earlier event,
nothing before it can have changed either.

The file is a small JSON document::

    {"format": "checkpoint-eventlog/digest", "version": 1, "taken_at": "…",
     "tenant": null, "streams": [{"tenant": "t", "stream": "s", "version": 3,
     "hash": "<64 hex>"}, …], "digest": "<64 hex>"}

``digest`` is SHA-256 over the scope and the sorted heads (each field length-prefixed),
so a file edited by hand is refused rather than trusted. That proves only that the log
matches the file, not who wrote the file: whoever can edit the heads can recompute the
SHA-256. A digest signed with the operator's Ed25519 key (`encode_digest` with ``key``,
`eventlog.signing`) also carries::

    "signature": {"algorithm": "ed25519", "key_id": "<16 hex>", "value": "<128 hex>"}

over the digest and ``taken_at``; `decode_digest` with the public key refuses a file whose
heads, scope or time changed after it was signed, or that another key signed.
"""

from __future__ import annotations

import hashlib
import json
import struct
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from eventlog.clock import read_clock
from eventlog.errors import DigestRefused, EventLogError, InvalidInput
from eventlog.log import EventLog
from eventlog.records import RecordedEvent, StreamProblem
from eventlog.signing import ALGORITHM, key_id, sign, signature_holds
from eventlog.validation import check_id

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PrivateKey, Ed25519PublicKey

FORMAT = "checkpoint-eventlog/digest"
FORMAT_VERSION = 1
_PAGE = 1000


class StreamHead(msgspec.Struct, frozen=True, kw_only=True, order=True):
    """One stream's last version and that event's hash when the digest was taken."""

    tenant_id: str
    stream_id: str
    version: int
    hash: bytes


class DigestSignature(msgspec.Struct, frozen=True, kw_only=True):
    """An Ed25519 signature over a digest and its time, and the id of the key that made
    it (`eventlog.signing.key_id`)."""

    key_id: str
    value: bytes


class LogDigest(msgspec.Struct, frozen=True, kw_only=True):
    """The heads of every stream (of one tenant, or of the whole log) at one moment, and
    the operator's signature over them when the digest was signed."""

    taken_at: datetime
    tenant_id: str | None
    streams: tuple[StreamHead, ...]
    signature: DigestSignature | None = None

    @property
    def digest(self) -> str:
        """SHA-256 (hex) over the scope and every head, in order."""
        return _digest_of(self.tenant_id, self.streams)

    @property
    def signed_message(self) -> bytes:
        """What a signature covers: the digest (scope and heads) and ``taken_at``."""
        return (b"checkpoint-eventlog/digest-signature/v1\x00" + self.digest.encode()
                + b"\x00" + self.taken_at.isoformat().encode())


def sign_digest(digest: LogDigest, key: Ed25519PrivateKey) -> LogDigest:
    """``digest`` signed with the operator's private ``key``."""
    return msgspec.structs.replace(digest, signature=DigestSignature(
        key_id=key_id(key), value=sign(key, digest.signed_message)))


async def take_digest(log: EventLog, tenant_id: str | None = None) -> LogDigest:
    """The current head of every stream, read through the gap-safe log order.

    On PostgreSQL, call `EventLog.wait_readable` first so that everything committed
    before the call is included.
    """
    if tenant_id is not None:
        check_id("tenant_id", tenant_id)
    heads: dict[tuple[str, str], StreamHead] = {}
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=tenant_id)
        for event in page.events:
            key = (event.tenant_id, event.stream_id)
            head = heads.get(key)
            if head is None or event.version > head.version:
                heads[key] = StreamHead(tenant_id=event.tenant_id, stream_id=event.stream_id,
                                        version=event.version, hash=event.hash)
        if not page.events:
            break
        cursor = page.cursor
    return LogDigest(taken_at=read_clock(log.clock), tenant_id=tenant_id,
                     streams=tuple(sorted(heads.values())))


async def check_digest(log: EventLog, digest: LogDigest) -> list[StreamProblem]:
    """Every stream of ``digest`` that the log no longer holds up to its head, or holds
    with another hash there: kinds ``stream_missing``, ``stream_cut``, ``stream_rewritten``.
    """
    problems: list[StreamProblem] = []
    for head in digest.streams:
        problem = await _check_head(log, head)
        if problem is not None:
            problems.append(problem)
    return problems


async def _check_head(log: EventLog, head: StreamHead) -> StreamProblem | None:
    def problem(kind: str, detail: str) -> StreamProblem:
        return StreamProblem(tenant_id=head.tenant_id, stream_id=head.stream_id,
                             version=head.version, kind=kind, detail=detail)

    try:
        at_head = await _first_event(log, head, head.version)
    except EventLogError as error:
        return problem("stream_rewritten", f"the event at the digest's head does not read "
                                           f"back ({type(error).__name__})")
    if at_head is not None and at_head.version == head.version:
        if at_head.hash == head.hash:
            return None
        return problem("stream_rewritten", f"version {head.version} hashes to "
                                           f"{at_head.hash.hex()[:16]}…, the digest "
                                           f"recorded {head.hash.hex()[:16]}…")
    try:
        first = await _first_event(log, head, 1)
    except EventLogError:
        first = None
    if first is None:
        return problem("stream_missing", f"the stream is gone; the digest recorded "
                                         f"{head.version} events")
    return problem("stream_cut", f"the stream ends before version {head.version}, "
                                 f"the digest's head")


async def _first_event(log: EventLog, head: StreamHead, from_version: int
                       ) -> RecordedEvent | None:
    events = [event async for event in log.read_stream(
        head.tenant_id, head.stream_id, from_version=from_version, limit=1)]
    return events[0] if events else None


def encode_digest(digest: LogDigest, key: Ed25519PrivateKey | None = None) -> bytes:
    """The digest as its JSON document (one line, UTF-8), signed with ``key`` when given
    (else carrying the signature ``digest`` already has, if any)."""
    if key is not None:
        digest = sign_digest(digest, key)
    document: dict[str, Any] = {
        "format": FORMAT, "version": FORMAT_VERSION, "taken_at": digest.taken_at.isoformat(),
        "tenant": digest.tenant_id,
        "streams": [{"tenant": head.tenant_id, "stream": head.stream_id,
                     "version": head.version, "hash": head.hash.hex()}
                    for head in digest.streams],
        "digest": digest.digest,
    }
    if digest.signature is not None:
        document["signature"] = {"algorithm": ALGORITHM, "key_id": digest.signature.key_id,
                                 "value": digest.signature.value.hex()}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode_digest(data: bytes, key: Ed25519PublicKey | None = None) -> LogDigest:
    """A digest read back from its document; `InvalidInput` naming what is wrong, and
    `DigestRefused` (an `InvalidInput`) for a document whose heads no longer match its own
    digest. With the operator's public ``key``, the signature is checked first: an
    unsigned document, one signed by another key, or one changed after it was signed is
    refused (`DigestRefused`)."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput("digest", f"not a JSON document ({error})") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput("digest", f"not a {FORMAT} document")
    if type(document.get("version")) is not int or document["version"] != FORMAT_VERSION:
        raise InvalidInput("digest", f"unsupported version {document.get('version')!r}")
    tenant = document.get("tenant")
    if tenant is not None:
        check_id("digest tenant", tenant)
    streams = document.get("streams")
    if not isinstance(streams, list):
        raise InvalidInput("digest", "'streams' must be a list")
    heads = tuple(sorted(_head_of(entry, number) for number, entry in enumerate(streams, 1)))
    try:
        taken_at = datetime.fromisoformat(document.get("taken_at", ""))
    except (TypeError, ValueError) as error:
        raise InvalidInput("digest", "'taken_at' is not an ISO 8601 time") from error
    digest = LogDigest(taken_at=taken_at, tenant_id=tenant, streams=heads,
                       signature=_signature_of(document.get("signature")))
    if key is not None:
        _check_signature(digest, key)
    if document.get("digest") != digest.digest:
        raise DigestRefused("digest", "the document's digest does not match its heads: "
                                      "the file was changed after it was written")
    return digest


def _signature_of(entry: Any) -> DigestSignature | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or entry.get("algorithm") != ALGORITHM:
        raise InvalidInput("digest", f"'signature' must be an {ALGORITHM} signature object")
    found_id, value = entry.get("key_id"), entry.get("value")
    if not isinstance(found_id, str) or not isinstance(value, str) or len(value) != 128:
        raise InvalidInput("digest", "'signature' needs a key_id and a 128-hex-digit value")
    try:
        return DigestSignature(key_id=found_id, value=bytes.fromhex(value))
    except ValueError:
        raise InvalidInput("digest", "'signature' value is not hex") from None


def _check_signature(digest: LogDigest, key: Ed25519PublicKey) -> None:
    expected = key_id(key)
    if digest.signature is None:
        raise DigestRefused("digest", f"is not signed, and a key ({expected}) was given to "
                                      "check its signature")
    if digest.signature.key_id != expected:
        raise DigestRefused("digest", f"was signed by key {digest.signature.key_id[:16]}, "
                                      f"not by the given key {expected}")
    if not signature_holds(key, digest.signature.value, digest.signed_message):
        raise DigestRefused("digest", f"its signature by key {expected} does not hold: the "
                                      "file was changed after it was signed")


def _head_of(entry: Any, number: int) -> StreamHead:
    where = f"stream entry {number}"
    if not isinstance(entry, dict):
        raise InvalidInput("digest", f"{where} is not an object")
    tenant = check_id(f"{where} tenant", entry.get("tenant"))
    stream = check_id(f"{where} stream", entry.get("stream"))
    version, hash_hex = entry.get("version"), entry.get("hash")
    if type(version) is not int or not 1 <= version < 2**63:
        raise InvalidInput("digest", f"{where} has no valid version")
    if not isinstance(hash_hex, str) or len(hash_hex) != 64:
        raise InvalidInput("digest", f"{where} has no valid hash")
    try:
        hash_bytes = bytes.fromhex(hash_hex)
    except ValueError as error:
        raise InvalidInput("digest", f"{where} has no valid hash") from error
    return StreamHead(tenant_id=tenant, stream_id=stream, version=version, hash=hash_bytes)


def _digest_of(tenant_id: str | None, heads: tuple[StreamHead, ...]) -> str:
    hasher = hashlib.sha256(b"checkpoint-eventlog/digest/v1\x00")
    hasher.update(_field((tenant_id or "").encode()) + (b"\x01" if tenant_id else b"\x00"))
    for head in heads:
        hasher.update(_field(head.tenant_id.encode()) + _field(head.stream_id.encode())
                      + struct.pack(">Q", head.version) + head.hash)
    return hasher.hexdigest()


def _field(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value
