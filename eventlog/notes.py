"""Signed tree heads as C2SP signed notes (``c2sp.org/signed-note``, ``tlog-checkpoint``).

A head is a checkpoint: its *body* is three lines, the origin (which names the log and the
tenant), the tree's size in decimal and its root in standard base64, each ending in a
newline. A signed note is the body, a blank line, and one signature line per signer::

    — <name> <base64(key ID || Ed25519 signature of the body)>

where the key ID is the first 4 bytes of ``SHA-256(name || "\\n" || 0x01 || public key)``.
That is the format Go's ``golang.org/x/mod/sumdb/note``, witnesses and other tlog tools
read, so our heads are theirs too. A verifier is configured with a key's *verifier key*,
``name+keyID(hex)+base64(0x01 || public key)`` (`verifier_key`), what ``note.Open`` takes.

Origins and key names (``tlog-checkpoint``: "the log's key name in its signature line
SHOULD match the origin line"): a head of tenant T in the log its operator calls NAME has
the origin ``NAME/`` followed by T percent-encoded (`encode_tenant`: every byte of its
UTF-8 but the URL-unreserved ``A-Z a-z 0-9 - . _ ~`` as ``%XX``), so any tenant id (a
space, a ``+``, a ``/``, non-ASCII) gives a valid origin and key name, and is signed
under that origin as its key name. Heads written before (key name NAME, origin
``NAME/T`` with T as it is) still open (`eventlog.proofs.open_head`).

Reading follows ``signed-note``: the note must be UTF-8 with no control character but
newline; every signature line is parsed (a malformed one refuses the note); lines of
keys the verifier does not know are ignored, however many; a line of the known key (its
name and key ID) that does not verify refuses the note.

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
    "cosignature_key_hash", "cosignature_message", "cosignatures", "decode_tenant",
    "encode_tenant", "key_hash", "note_signed_by", "open_note", "origin_for",
    "parse_checkpoint", "parse_note", "parse_verifier_key", "sign_checkpoint", "verifier_key",
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
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")
"""What a signed note may not hold: ASCII controls but newline."""
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ENCODED = re.compile(r"(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})+")
MAX_NOTE = 1 << 20
MAX_SIGNATURES = 100
"""The most signature lines a note may carry (as Go's ``note.Open``; the spec asks for at
least 16): past it the note is refused unread."""


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
    """The origin line of ``tenant_id``'s tree in the log its operator calls ``name``:
    ``name/`` and the tenant id percent-encoded (`encode_tenant`). It is also the key name
    its head is signed under."""
    return f"{check_name(name)}/{encode_tenant(tenant_id)}"


def encode_tenant(tenant_id: str) -> str:
    """``tenant_id`` as an origin's last segment: each byte of its UTF-8 that is not
    URL-unreserved (``A-Z a-z 0-9 - . _ ~``) written ``%XX`` (upper-case hex), so the
    origin holds no space, ``+``, ``/`` or non-ASCII character and any id has one."""
    return "".join(chr(byte) if byte in _UNRESERVED else f"%{byte:02X}"
                   for byte in tenant_id.encode())


def decode_tenant(segment: str) -> str | None:
    """The tenant id `encode_tenant` wrote as ``segment``; None if no id encodes to it
    (another character, a lower-case or broken escape, bytes that are not UTF-8)."""
    if not _ENCODED.fullmatch(segment):
        return None
    raw = bytearray()
    position = 0
    while position < len(segment):
        if segment[position] == "%":
            raw.append(int(segment[position + 1 : position + 3], 16))
            position += 3
        else:
            raw.append(ord(segment[position]))
            position += 1
    try:
        tenant = raw.decode()
    except UnicodeDecodeError:
        return None
    return tenant if encode_tenant(tenant) == segment else None


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


def parse_verifier_key(text: str, field: str = "verifier key") -> tuple[str, Ed25519PublicKey]:
    """The key name and Ed25519 public key of a verifier key ``name+hash+base64(0x01 ||
    key)`` (as `verifier_key` writes and Go's ``note.NewVerifier`` reads); `InvalidInput`
    naming ``field`` if it is not one, or its key hash is not its name's and key's."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    name, _, rest = text.strip().partition("+")
    hashed, _, encoded = rest.partition("+")
    try:
        raw = base64.b64decode(encoded, validate=True)
        wanted = bytes.fromhex(hashed)
    except (binascii.Error, ValueError):
        raw, wanted = b"", b""
    if not _NAME.fullmatch(name) or len(wanted) != 4 or len(raw) != 33 or raw[0] != ED25519:
        raise InvalidInput(field, "is not an Ed25519 verifier key (NAME+HASH+BASE64, as "
                                  "`eventlog verifier-key` prints it)")
    public = Ed25519PublicKey.from_public_bytes(raw[1:])
    if key_hash(name, public) != wanted:
        raise InvalidInput(field, f"has the key hash {hashed}, which is not the hash of its "
                                  f"name {name!r} and its key"[:200])
    return name, public


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
    if (control := _CONTROL.search(text)) is not None:
        raise InvalidInput(field, f"is not a signed note: it holds the control character "
                                  f"{control.group()!r} (only newlines may end its lines)")
    if not text.endswith("\n") or "\n\n" not in text:
        raise InvalidInput(field, "is not a signed note: no blank line before its signatures")
    cut = text.rindex("\n\n")
    body, lines = text[: cut + 1], text[cut + 2 :].split("\n")[:-1]
    if not lines:
        raise InvalidInput(field, "is not a signed note: it has no signature line")
    if len(lines) > MAX_SIGNATURES:
        raise InvalidInput(field, f"carries {len(lines)} signature lines, more than the "
                                  f"{MAX_SIGNATURES} a note may carry")
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
    """Whether ``note`` is signed by ``public`` under ``name``: it carries a line of that
    key (its name and key ID) and every such line verifies. Lines of other keys are
    ignored, as signed-note verifiers do; a line of this key that does not verify refuses
    the note (``signed-note``: "clients SHOULD reject the whole note")."""
    return note_signed_by(note, name, public) is True


def note_signed_by(note: SignedNote, name: str, public: Ed25519PublicKey) -> bool | None:
    """None if ``note`` carries no line of the key ``public`` named ``name``; else whether
    every such line verifies."""
    from eventlog.signing import signature_holds

    wanted = key_hash(name, public)
    message = note.text.encode()
    lines = [signature for signer, hashed, signature in note.signatures
             if signer == name and hashed == wanted]
    if not lines:
        return None
    return all(signature_holds(public, signature, message) for signature in lines)


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
    if "" in lines[3:-1]:
        raise InvalidInput(field, "is not a checkpoint: it has an empty extension line")
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
