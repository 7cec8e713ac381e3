"""Signed tree heads as C2SP signed notes (``c2sp.org/signed-note``, ``tlog-checkpoint``).

A head is a checkpoint: its *body* is three lines, the origin (which names the log and the
tenant), the tree's size in decimal and its root in standard base64, each ending in a
newline. A signed note is the body, a blank line, and one signature line per signer::

    — <name> <base64(key hash || Ed25519 signature of the body)>

where the key hash is the first 4 bytes of ``SHA-256(name || "\\n" || 0x01 || public key)``.
That is the format Go's ``golang.org/x/mod/sumdb/note``, witnesses and other tlog tools
read, so our heads are theirs too.

A witness's *cosignature* (C2SP ``tlog-cosignature``, ``cosignature/v1``) is one more
signature line on the same note: its key hash is ``SHA-256(name || "\n" || 0x04 ||
public key)[:4]``, and what follows it is an 8-byte big-endian POSIX timestamp and the
Ed25519 signature of ``"cosignature/v1\ntime <timestamp>\n" || the note's body``: the
statement that, at that time, this was the largest consistent head the witness had seen
for the origin. The auditor's side: nothing here opens a database;
`cryptography` is loaded only by the functions that sign or check.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import re
from typing import TYPE_CHECKING

from eventlog.errors import InvalidInput
from eventlog.merkle import HASH_SIZE

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "COSIGNATURE_V1", "Checkpoint", "Cosignature", "SignedNote", "check_name", "cosign_note",
    "cosignature_key_hash", "cosignature_message", "cosignatures", "key_hash", "open_note",
    "origin_for", "parse_checkpoint", "parse_note", "sign_checkpoint", "verifier_key",
]

DASH = "\u2014"
"""The em dash that opens every signature line."""
ED25519 = 0x01
"""The signature type byte of Ed25519 keys in signed notes."""
COSIGNATURE_V1 = 0x04
"""The signature type byte of Ed25519 ``cosignature/v1`` keys (C2SP tlog-cosignature)."""
_MAX_TIMESTAMP = (1 << 63) - 1
_NAME = re.compile(r"[^\s+]+")
_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,19})")
MAX_NOTE = 1 << 20


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A tree head: the tree of ``size`` leaves of ``origin``'s log has ``root``."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def body(self) -> str:
        """The checkpoint's note text (the signed bytes, decoded)."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode(),
                 *self.extensions]
        return "".join(line + "\n" for line in lines)


@dataclasses.dataclass(frozen=True)
class Cosignature:
    """A witness's valid cosignature on a note: the witness's key ``name`` and the POSIX
    ``timestamp`` it signed."""

    name: str
    timestamp: int


@dataclasses.dataclass(frozen=True)
class SignedNote:
    """A note's text and its signature lines, as ``(name, key hash, signature)``."""

    text: str
    signatures: tuple[tuple[str, bytes, bytes], ...]


def origin_for(name: str, tenant_id: str) -> str:
    """The origin line of ``tenant_id``'s tree in the log its operator calls ``name``."""
    return f"{check_name(name)}/{tenant_id}"


def check_name(name: str, field: str = "name") -> str:
    """``name`` if it can name a key in a signed note (not empty, no space, no ``+``)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(field, f"must be a key name without spaces or '+', not {name!r}"[:200])
    return name


def key_hash(name: str, public: Ed25519PublicKey) -> bytes:
    """The 4-byte key hash of an Ed25519 key named ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ED25519]) + _raw(public)).digest()[:4]


def verifier_key(name: str, public: Ed25519PublicKey) -> str:
    """The key as ``sumdb/note`` verifiers write it: ``name+hash+base64(0x01 || key)``."""
    encoded = base64.b64encode(bytes([ED25519]) + _raw(public)).decode()
    return f"{check_name(name)}+{key_hash(name, public).hex()}+{encoded}"


def sign_checkpoint(checkpoint: Checkpoint, name: str, key: Ed25519PrivateKey) -> str:
    """The signed note of ``checkpoint``, signed by ``key`` under ``name``."""
    from eventlog.signing import sign

    check_name(name)
    body = checkpoint.body()
    signature = sign(key, body.encode())
    stamp = base64.b64encode(key_hash(name, key.public_key()) + signature).decode()
    return f"{body}\n{DASH} {name} {stamp}\n"


def parse_note(text: str, field: str = "head") -> SignedNote:
    """A signed note's text and signature lines; `InvalidInput` naming ``field`` if it is
    not one (no blank line before the signatures, a malformed signature line)."""
    if not isinstance(text, str) or len(text) > MAX_NOTE:
        raise InvalidInput(field, "is not a signed note (not text, or over 1 MiB)")
    if not text.endswith("\n") or "\n\n" not in text:
        raise InvalidInput(field, "is not a signed note: no blank line before its signatures")
    cut = text.rindex("\n\n")
    body, lines = text[: cut + 1], text[cut + 2 :].splitlines()
    if not lines:
        raise InvalidInput(field, "is not a signed note: it has no signature line")
    return SignedNote(body, tuple(_signature_line(line, field) for line in lines))


def _signature_line(line: str, field: str) -> tuple[str, bytes, bytes]:
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != DASH or not _NAME.fullmatch(parts[1]):
        raise InvalidInput(field, f"has a malformed signature line {line!r}"[:200])
    try:
        raw = base64.b64decode(parts[2], validate=True)
    except binascii.Error:
        raise InvalidInput(field, f"has a signature that is not base64: {line!r}"[:200]) from None
    if len(raw) < 5:
        raise InvalidInput(field, f"has a signature too short to hold a key hash: {line!r}"[:200])
    return parts[1], raw[:4], raw[4:]


def open_note(note: SignedNote, name: str, public: Ed25519PublicKey) -> bool:
    """Whether ``note`` carries a valid signature by ``public`` under ``name``. Signature
    lines of other keys are ignored, as signed-note verifiers do."""
    from eventlog.signing import signature_holds

    wanted = key_hash(name, public)
    message = note.text.encode()
    return any(signer == name and hashed == wanted and signature_holds(public, signature, message)
               for signer, hashed, signature in note.signatures)


def parse_checkpoint(body: str, field: str = "head") -> Checkpoint:
    """The checkpoint a note's text holds; `InvalidInput` naming ``field`` if it holds none."""
    lines = body.split("\n")
    if len(lines) < 4 or lines[-1] != "" or not lines[0]:
        raise InvalidInput(field, "is not a checkpoint: it needs an origin, a size and a root line")
    origin, size, root = lines[0], lines[1], lines[2]
    if not _DECIMAL.fullmatch(size) or int(size) >= 1 << 64:
        raise InvalidInput(field, f"has a size that is not a decimal number: {size!r}"[:200])
    try:
        digest = base64.b64decode(root, validate=True)
    except binascii.Error:
        digest = b""
    if len(digest) != HASH_SIZE:
        raise InvalidInput(field, f"has a root that is not a base64 SHA-256 hash: {root!r}"[:200])
    return Checkpoint(origin, int(size), digest, tuple(lines[3:-1]))


def _raw(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def cosignature_key_hash(name: str, public: Ed25519PublicKey) -> bytes:
    """The 4-byte key ID of a witness's Ed25519 ``cosignature/v1`` key named ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([COSIGNATURE_V1])
                          + _raw(public)).digest()[:4]


def cosignature_message(body: str, timestamp: int) -> bytes:
    """What a ``cosignature/v1`` signs: the header line, the time line, the note's body."""
    return f"cosignature/v1\ntime {timestamp}\n{body}".encode()


def cosign_note(text: str, name: str, key: Ed25519PrivateKey, timestamp: int) -> str:
    """``text`` (a signed note) with the cosignature of the witness ``key`` named ``name``
    at ``timestamp`` appended; an earlier line of the same name and key is replaced."""
    from eventlog.signing import sign

    check_name(name)
    if not isinstance(timestamp, int) or not 0 <= timestamp <= _MAX_TIMESTAMP:
        raise InvalidInput("timestamp", f"must be a POSIX time in 0..2**63-1, not {timestamp!r}")
    note = parse_note(text)
    hashed = cosignature_key_hash(name, key.public_key())
    signature = sign(key, cosignature_message(note.text, timestamp))
    stamp = base64.b64encode(hashed + timestamp.to_bytes(8, "big") + signature).decode()
    kept = [line for line, (signer, key_id, _) in zip(
        text[len(note.text) + 1:].splitlines(), note.signatures, strict=True)
        if (signer, key_id) != (name, hashed)]
    return note.text + "\n" + "".join(line + "\n" for line in kept) + f"{DASH} {name} {stamp}\n"


def cosignatures(note: SignedNote, public: Ed25519PublicKey) -> list[Cosignature]:
    """The valid ``cosignature/v1`` signatures of the witness key ``public`` on ``note``
    (under whatever name each line gives: its key ID binds the name to the key). Lines of
    other keys, or that do not verify, are ignored, as signed-note verifiers do."""
    from eventlog.signing import signature_holds

    found = []
    for signer, hashed, raw in note.signatures:
        if len(raw) != 8 + 64 or hashed != cosignature_key_hash(signer, public):
            continue
        timestamp = int.from_bytes(raw[:8], "big")
        if timestamp <= _MAX_TIMESTAMP and signature_holds(
                public, raw[8:], cosignature_message(note.text, timestamp)):
            found.append(Cosignature(signer, timestamp))
    return found
