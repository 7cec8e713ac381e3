"""Sealing bytes under a subject's data key: AES-256-GCM in a self-describing envelope.

    envelope = magic ‖ header ‖ nonce (12) ‖ ciphertext+tag
    header   = len ‖ subject ‖ generation (u32) ‖ len ‖ stream ‖ len ‖ kind
               [‖ len ‖ record]                            (the second form only)
    AD       = magic ‖ len ‖ tenant ‖ header

Two forms, told by their magic: ``MAGIC`` (the first: state blobs, and every sealed field
written before records were bound) and ``MAGIC_RECORD``, whose header also names the
record (a checkpoint's, a batch's id, as its event type says: `Event.sealed_record`) the
value belongs to, so a value a view row holds is bound to that row's record, not only to
its stream: one copied into another record's row of the same stream is refused too. A
reader reads both forms; a writer writes the second wherever the event names a record.

The header is in the clear (subject and stream are ids, clear everywhere else too; kind
says what the bytes are: ``state``, or an event type's field) so a reader knows which key
opens the bytes and can check they belong where it found them; the associated data binds
the tenant and the whole header, so a ciphertext moved to another tenant does not open,
and one moved to another subject, stream or field is refused by the reader that expects
its own. A state blob's nonce is derived
(HMAC-SHA256 of the AD and the plaintext under a key of its own, the SIV construction),
so one state sealed twice in one place is one blob, and its address, the SHA-256 of the
envelope, is keyed: no plaintext digest is ever stored.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
from functools import cached_property
from typing import NamedTuple

MAGIC = b"\x00els1"
"""Every sealed envelope starts with these bytes (a JSON or pickle payload never does)."""
MAGIC_RECORD = b"\x00els2"
"""The magic of the form whose header names a record too (`Header.record`)."""
_NONCE = 12
_GENERATION = struct.Struct(">I")


class Header(NamedTuple):
    """Whose a sealed envelope is: subject, key generation, stream, and what it holds."""

    subject: str
    generation: int
    stream: str
    kind: str
    record: str = ""
    """The record the bytes belong to (the second form); empty in the first."""


def _field(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">H", len(raw)) + raw


def encode_header(header: Header) -> bytes:
    """The envelope's head: its magic (by form) and the header's fields."""
    fields = (_field(header.subject) + _GENERATION.pack(header.generation)
              + _field(header.stream) + _field(header.kind))
    if header.record:
        return MAGIC_RECORD + fields + _field(header.record)
    return MAGIC + fields


def parse(envelope: bytes) -> tuple[Header, int] | None:
    """The header of a sealed envelope and where its nonce starts; None if ``envelope``
    is not one (plaintext, or damaged beyond reading)."""
    bound = envelope.startswith(MAGIC_RECORD)
    if not bound and not envelope.startswith(MAGIC):
        return None
    record = ""
    try:
        at = len(MAGIC)
        subject, at = _take(envelope, at)
        (generation,) = _GENERATION.unpack_from(envelope, at)
        stream, at = _take(envelope, at + _GENERATION.size)
        kind, at = _take(envelope, at)
        if bound:
            record, at = _take(envelope, at)
    except (struct.error, UnicodeDecodeError, IndexError):
        return None
    if len(envelope) < at + _NONCE + 16 or (bound and not record):
        return None
    return Header(subject, generation, stream, kind, record), at


def _take(data: bytes, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">H", data, at)
    end = at + 2 + size
    if end > len(data):
        raise IndexError("short")
    return data[at + 2:end].decode(), end


class DataKey:
    """A subject's data key (32 bytes) and the keys derived from it."""

    __slots__ = ("__dict__", "raw")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    @classmethod
    def new(cls) -> DataKey:
        return cls(secrets.token_bytes(32))

    @cached_property
    def _aead(self) -> object:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return AESGCM(hmac.new(self.raw, b"eventlog seal", hashlib.sha256).digest())

    @cached_property
    def _nonce_key(self) -> bytes:
        return hmac.new(self.raw, b"eventlog nonce", hashlib.sha256).digest()

    def seal(self, tenant: str, header: Header, plaintext: bytes, *, derived: bool) -> bytes:
        """The envelope of ``plaintext``; a ``derived`` nonce makes it deterministic."""
        head = encode_header(header)
        ad = _ad(tenant, head)
        nonce = (hmac.new(self._nonce_key, ad + plaintext, hashlib.sha256).digest()[:_NONCE]
                 if derived else secrets.token_bytes(_NONCE))
        sealed: bytes = self._aead.encrypt(nonce, plaintext, ad)  # type: ignore[attr-defined]
        return head + nonce + sealed

    def open(self, tenant: str, envelope: bytes, start: int) -> bytes:
        """The plaintext; raises ``cryptography.exceptions.InvalidTag`` when it does not
        open here (another tenant or key, or changed bytes)."""
        ad = _ad(tenant, envelope[:start])
        nonce = envelope[start:start + _NONCE]
        opened: bytes = self._aead.decrypt(  # type: ignore[attr-defined]
            nonce, envelope[start + _NONCE:], ad)
        return opened


def _ad(tenant: str, head: bytes) -> bytes:
    magic = len(MAGIC)  # both forms' magics are as long
    return head[:magic] + _field(tenant) + head[magic:]
