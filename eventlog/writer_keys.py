"""The application's writer key: each event's signature, and the public keys that check it
(docs/encryption.md, "Only the application writes the log").

The chain is unkeyed: whoever can insert a row can compute its hash. Only the application
holds the writer key (in its keyring beside the key-encryption key, or in a KMS), so every
append made by a log whose keyring holds one is signed, and a row the database
administrator writes is not. Each signed event stores, in its ``signature`` column, 72
bytes: the writer key's id (the first 8 bytes of the SHA-256 of its raw public key, the
16 hex digits `eventlog.signing.key_id` prints) and the Ed25519 signature of
``DOMAIN || hash``. The chain hash covers the tenant, stream, version, event id, type,
recorded time, bytes, actor and previous hash (`eventlog.hashing`), so the signature covers
them all; the key id lets the key rotate while old events stay checkable.

Checking needs public keys only (`WriterKeys`): from the keyring, or from a file an
auditor is given (PEM public keys, or the C2SP signed-note verifier keys
``name+hash+base64`` that ``eventlog keys public`` prints). Pure: nothing here opens a
database, and ``cryptography`` is loaded on first use.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from eventlog.errors import InvalidInput

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PublicKey

__all__ = [
    "CONSUMER_DOMAIN", "DOMAIN", "KEY_ID_SIZE", "SIGNATURE_SIZE", "EventSigner", "WriterKeys",
    "coerce_keys",
    "key_id_of", "message", "parse_writer_keys", "public_pem", "raw_public", "signer_of",
    "verifier_key_line",
]

DOMAIN = b"checkpoint-eventlog/event-signature/v1\n"
"""What every signed event message starts with: a writer key signs event hashes, and
(under `CONSUMER_DOMAIN`) consumers' rows, nothing else."""
CONSUMER_DOMAIN = b"checkpoint-eventlog/consumer-row/v1\n"
"""What a consumer row's signed message starts with (the digest of its fields the log
signs): no event signature is a consumer row's, and no row's an event's."""
KEY_ID_SIZE = 8
SIGNATURE_SIZE = KEY_ID_SIZE + 64
"""Bytes of a stored signature: the key id, then the Ed25519 signature."""
DEFAULT_NAME = "eventlog-writer"
"""The key name a verifier key carries unless one is given (C2SP signed-note)."""
_PEM = re.compile(r"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----", re.DOTALL)
_VERIFIER = re.compile(r"[^\s+]+\+[0-9a-f]{8}\+[A-Za-z0-9+/=]+")


def message(event_hash: bytes) -> bytes:
    """What the writer key signs for an event: the domain and the event's chain hash."""
    return DOMAIN + event_hash


def raw_public(public: Ed25519PublicKey) -> bytes:
    """The key's 32 raw bytes."""
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id_of(public: Ed25519PublicKey | bytes) -> bytes:
    """A writer key's 8-byte id: the start of the SHA-256 of its raw public key."""
    raw = public if isinstance(public, bytes) else raw_public(public)
    return hashlib.sha256(raw).digest()[:KEY_ID_SIZE]


class EventSigner:
    """Signs event hashes with a writer key: ``signer(hash)`` is the 72 bytes stored with
    the event. ``sign`` is the key holder's own signing (a keyring's, a KMS's); ``public``
    the key's 32 raw public bytes."""

    def __init__(self, sign: Callable[[bytes], bytes], public: bytes) -> None:
        self._sign = sign
        self.public = public
        self.raw_id = key_id_of(public)
        self.key_id = self.raw_id.hex()

    def __call__(self, event_hash: bytes) -> bytes:
        signature = self._sign(message(event_hash))
        if not isinstance(signature, bytes) or len(signature) != 64:
            raise InvalidInput("keyring", "its writer key made no 64-byte Ed25519 signature")
        return self.raw_id + signature

    def sign_consumer_row(self, digest: bytes) -> bytes:
        """The 72 bytes stored with a consumer's row: the key id and the signature of
        ``CONSUMER_DOMAIN || digest`` (the row's digest)."""
        signature = self._sign(CONSUMER_DOMAIN + digest)
        if not isinstance(signature, bytes) or len(signature) != 64:
            raise InvalidInput("keyring", "its writer key made no 64-byte Ed25519 signature")
        return self.raw_id + signature

    def __repr__(self) -> str:
        return f"EventSigner(key_id={self.key_id!r})"


def signer_of(provider: Any) -> EventSigner | None:
    """The `EventSigner` of a keyring that holds a writer key (``writer_public_key`` and
    ``sign_as_writer``, `eventlog.crypto.WriterKeyProvider`), else None."""
    public = getattr(provider, "writer_public_key", None)
    sign = getattr(provider, "sign_as_writer", None)
    if public is None or sign is None:
        return None
    if not isinstance(public, bytes) or len(public) != 32:
        raise InvalidInput("keyring", "its writer_public_key must be 32 raw Ed25519 bytes")
    return EventSigner(sign, public)


HELD_CACHE = 10_000
"""Signatures a `WriterKeys` remembers having checked (least recent forgotten)."""


class WriterKeys:
    """The writer public keys whose signatures hold (the current key and the retired ones
    whose events the log still keeps), by key id.

    It remembers the last `HELD_CACHE` (hash, signature) pairs it found holding, so a
    decision that reads the same stream again (a retention pass rereads its holds after
    each lost race) pays Ed25519's ~60 µs per event once: a pair that held once holds
    forever, and a changed row is another pair."""

    def __init__(self, keys: Iterable[Ed25519PublicKey | bytes]) -> None:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        self._held: OrderedDict[bytes, None] = OrderedDict()
        self._keys: dict[bytes, Ed25519PublicKey] = {}
        for key in keys:
            public = Ed25519PublicKey.from_public_bytes(key) if isinstance(key, bytes) else key
            self._keys.setdefault(key_id_of(public), public)

    @property
    def ids(self) -> tuple[str, ...]:
        """The keys' ids (16 hex digits each), in the order given."""
        return tuple(raw.hex() for raw in self._keys)

    def public_keys(self) -> list[Ed25519PublicKey]:
        """The keys, in the order given."""
        return list(self._keys.values())

    def __bool__(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __or__(self, other: WriterKeys) -> WriterKeys:
        return WriterKeys([*self._keys.values(), *other._keys.values()])

    def forget_checked(self) -> None:
        """Forget which signatures held: each is checked afresh (what a cold read pays)."""
        self._held.clear()

    def check(self, event_hash: bytes, signature: bytes) -> str | None:
        """None when ``signature`` (as stored) is one of these keys' signature of
        ``event_hash``; otherwise why not, as a phrase."""
        from cryptography.exceptions import InvalidSignature

        if len(signature) != SIGNATURE_SIZE:
            return f"its signature holds {len(signature)} bytes, not {SIGNATURE_SIZE}"
        pair = event_hash + signature
        if pair in self._held:
            self._held.move_to_end(pair)
            return None
        key = self._keys.get(signature[:KEY_ID_SIZE])
        if key is None:
            return (f"it is signed by key {signature[:KEY_ID_SIZE].hex()}, which is not a "
                    "writer key given")
        try:
            key.verify(signature[KEY_ID_SIZE:], message(event_hash))
        except InvalidSignature:
            return (f"its signature is not writer key {signature[:KEY_ID_SIZE].hex()}'s "
                    "signature of its hash")
        self._held[pair] = None
        if len(self._held) > HELD_CACHE:
            self._held.popitem(last=False)
        return None

    def check_consumer_row(self, digest: bytes, signature: bytes) -> str | None:
        """None when ``signature`` (as stored) is one of these keys' signature of a
        consumer row whose digest is ``digest``; otherwise why not, as a phrase. Not
        cached: a row is checked when a consumer is claimed or listed, not per event."""
        from cryptography.exceptions import InvalidSignature

        if len(signature) != SIGNATURE_SIZE:
            return f"its signature holds {len(signature)} bytes, not {SIGNATURE_SIZE}"
        key = self._keys.get(signature[:KEY_ID_SIZE])
        if key is None:
            return (f"it is signed by key {signature[:KEY_ID_SIZE].hex()}, which is not a "
                    "writer key given")
        try:
            key.verify(signature[KEY_ID_SIZE:], CONSUMER_DOMAIN + digest)
        except InvalidSignature:
            return (f"its signature is not writer key {signature[:KEY_ID_SIZE].hex()}'s "
                    "signature of the row as it stands")
        return None


def public_pem(public: Ed25519PublicKey) -> str:
    """The key as a PEM ``PUBLIC KEY`` block (what ``openssl pkey -pubout`` writes)."""
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def verifier_key_line(public: Ed25519PublicKey, name: str = DEFAULT_NAME) -> str:
    """The key as a C2SP signed-note verifier key, ``name+hash+base64(0x01 || key)``."""
    from eventlog.notes import verifier_key

    return verifier_key(name, public)


def parse_writer_keys(text: str, field: str = "writer key") -> list[Ed25519PublicKey]:
    """Every writer public key in ``text``: PEM ``PUBLIC KEY`` blocks (a private key's PEM
    gives its public key) and verifier-key lines ``name+hash+base64``, other lines (a
    ``#`` comment) ignored. `InvalidInput` naming ``field`` when it holds none, or one that
    is not an Ed25519 key."""
    from eventlog.signing import load_public_key

    keys = [load_public_key(block.group(0).encode(), field) for block in _PEM.finditer(text)]
    rest = _PEM.sub("", text)
    keys += [_verifier_key(word, field) for line in rest.splitlines()
             if not line.lstrip().startswith("#") for word in line.split()
             if _VERIFIER.fullmatch(word)]
    if not keys:
        raise InvalidInput(field, "holds no public key (a PEM PUBLIC KEY block or a verifier "
                                  "key name+hash+base64, as `eventlog keys public` prints)")
    return keys


def _verifier_key(word: str, field: str) -> Ed25519PublicKey:
    """The key of a signed-note verifier key, its hash checked against its name and key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from eventlog.notes import ED25519, key_hash

    name, hashed, encoded = word.split("+", 2)
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raw = b""
    if len(raw) != 33 or raw[0] != ED25519:
        raise InvalidInput(field, f"verifier key {word[:60]!r} is not an Ed25519 key")
    public = Ed25519PublicKey.from_public_bytes(raw[1:])
    if key_hash(name, public).hex() != hashed:
        raise InvalidInput(field, f"verifier key {word[:60]!r}: its hash does not match its "
                                  "name and key")
    return public


def coerce_keys(values: Iterable[Any], field: str = "writer_keys") -> list[Ed25519PublicKey]:
    """Public keys from what ``open_log(writer_keys=...)`` takes: Ed25519 public keys, PEM
    text or bytes, verifier keys."""
    items = [values] if isinstance(values, str | bytes) else list(values)
    if not items:
        return []
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys: list[Ed25519PublicKey] = []
    for value in items:
        if isinstance(value, Ed25519PublicKey):
            keys.append(value)
        elif isinstance(value, str | bytes):
            text = value.decode() if isinstance(value, bytes) else value
            keys += parse_writer_keys(text, field)
        else:
            raise InvalidInput(field, "must hold Ed25519 public keys, PEM text or verifier "
                                      f"keys, not {type(value).__name__}")
    return keys
