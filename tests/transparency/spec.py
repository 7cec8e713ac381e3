"""An independent verifier of heads and proofs, written for the tests from the texts alone:
C2SP ``signed-note`` and ``tlog-checkpoint`` (c2sp.org), RFC 9162 §2.1.3.2 (verifying an
inclusion proof) and §2.1.4.2 (verifying consistency between two tree heads), and the
leaf recipe the guide gives (docs/transparency.md: envelope bytes → event hash → leaf). It
imports nothing of the code under test: only hashlib, base64 and `cryptography`'s Ed25519.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Refused(Exception):
    """The note, checkpoint or proof does not hold by the spec."""


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# -- signed-note ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Verifier:
    """A verifier key: ``<name>+<hex key ID>+<base64(0x01 || Ed25519 key)>``."""

    name: str
    key_id: bytes
    key: Ed25519PublicKey


def valid_key_name(name: str) -> bool:
    """signed-note: "Key names MUST be non-empty and MUST NOT contain any Unicode spaces
    or plus (U+002B) characters"."""
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


def parse_verifier(text: str) -> Verifier:
    name, hashed, encoded = text.strip().split("+", 2)
    raw = base64.b64decode(encoded, validate=True)
    if not valid_key_name(name) or len(raw) != 33 or raw[0] != 0x01:
        raise Refused("not an Ed25519 verifier key")
    key_id = bytes.fromhex(hashed)
    # "key ID = SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key)[:4]"
    if sha256(name.encode() + b"\n\x01" + raw[1:])[:4] != key_id:
        raise Refused("the verifier key's ID is not its name's and key's")
    return Verifier(name, key_id, Ed25519PublicKey.from_public_bytes(raw[1:]))


def open_note(note: bytes, verifier: Verifier) -> str:
    """The note's text if ``verifier`` signed it, by the signed-note spec."""
    text = note.decode("utf-8")  # "Signed notes MUST be valid UTF-8"
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise Refused("a control character")
    # "the text is separated from the signatures by the last empty line in the note"
    cut = text.rfind("\n\n")
    if cut < 0 or not text.endswith("\n"):
        raise Refused("no signature block")
    body, block = text[: cut + 1], text[cut + 2 :]
    verified = False
    for line in block.split("\n")[:-1]:
        # "em dash (U+2014), space (U+0020), key name, space, base64-encoded signature"
        if not line.startswith("\u2014 "):
            raise Refused(f"a malformed signature line {line!r}")
        name, _, encoded = line[2:].partition(" ")
        signature = base64.b64decode(encoded, validate=True)
        if not valid_key_name(name) or len(signature) < 5:
            raise Refused(f"a malformed signature line {line!r}")
        if (name, signature[:4]) != (verifier.name, verifier.key_id):
            continue  # "Verifiers MUST ignore signatures from unknown keys"
        try:
            verifier.key.verify(signature[4:], body.encode())
        except InvalidSignature:  # "clients SHOULD reject the whole note"
            raise Refused("a signature of the known key does not verify") from None
        verified = True
    if not verified:  # "If no signature from a known key verifies ... MUST reject"
        raise Refused("no signature of the known key")
    return body


# -- tlog-checkpoint -----------------------------------------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes


def parse_checkpoint(body: str) -> Checkpoint:
    """"at least three non-empty lines": origin, decimal size (no leading zeroes), the
    base64 root; extension lines non-empty."""
    lines = body.split("\n")[:-1]
    if len(lines) < 3 or "" in lines:
        raise Refused("not a checkpoint")
    origin, size, root = lines[:3]
    if not size.isascii() or not size.isdigit() or (size != "0" and size.startswith("0")):
        raise Refused("a size that is not decimal")
    return Checkpoint(origin, int(size), base64.b64decode(root, validate=True))


def sign_note(body: str, name: str, key: object) -> str:
    """A signed note of ``body`` by an Ed25519 private ``key`` under ``name``."""
    raw = key.public_key().public_bytes_raw()  # type: ignore[attr-defined]
    key_id = sha256(name.encode() + b"\n\x01" + raw)[:4]
    signature = key.sign(body.encode())  # type: ignore[attr-defined]
    return f"{body}\n\u2014 {name} {base64.b64encode(key_id + signature).decode()}\n"


def verifier_of(name: str, key: object) -> str:
    raw = key.public_key().public_bytes_raw()  # type: ignore[attr-defined]
    key_id = sha256(name.encode() + b"\n\x01" + raw)[:4]
    encoded = base64.b64encode(bytes([1]) + raw).decode()
    return f"{name}+{key_id.hex()}+{encoded}"


# -- RFC 9162 §2.1.3.2 and §2.1.4.2 --------------------------------------------------------

def node(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def inclusion_holds(hash_: bytes, leaf_index: int, tree_size: int,
                    inclusion_path: Sequence[bytes], root_hash: bytes) -> bool:
    """RFC 9162 §2.1.3.2, step by step; ``hash_`` is the leaf's hash."""
    if leaf_index >= tree_size:  # 1
        return False
    fn, sn = leaf_index, tree_size - 1  # 2
    r = hash_  # 3
    for p in inclusion_path:  # 4
        if sn == 0:  # 4a
            return False
        if fn & 1 or fn == sn:  # 4b
            r = node(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1  # 4c
        sn >>= 1
    return sn == 0 and r == root_hash  # 5


def consistency_holds(first: int, second: int, first_hash: bytes, second_hash: bytes,
                      consistency_path: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2, step by step (first == second, or first == 0, decided first)."""
    if first == second:
        return not consistency_path and first_hash == second_hash
    if first == 0 or first > second:
        return first == 0 and not consistency_path
    path = list(consistency_path)
    if not path:  # 1
        return False
    if first & (first - 1) == 0:  # 2: first is an exact power of 2
        path.insert(0, first_hash)
    fn, sn = first - 1, second - 1  # 3
    while fn & 1:  # 4
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]  # 5
    for c in path[1:]:  # 6
        if sn == 0:  # 6a
            return False
        if fn & 1 or fn == sn:  # 6b
            fr, sr = node(c, fr), node(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1  # 6c
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0  # 7


# -- the leaf recipe (docs/transparency.md, "Computing a leaf") ----------------------------

DOMAIN = b"checkpoint-eventlog/chain/v1"


def event_hash(*, tenant: str, stream: str, version: int, event_id: str, type_: str,
               recorded_at_micros: int, data: bytes, prev_hash: bytes,
               actor: str | None = None) -> bytes:
    """SHA-256 over the parts, each prefixed by its length as 8 bytes big-endian."""
    parts = [DOMAIN, tenant.encode(), stream.encode(), str(version).encode(),
             uuid.UUID(event_id).bytes, type_.encode(), str(recorded_at_micros).encode(),
             data, prev_hash, *([] if actor is None else [actor.encode()])]
    return sha256(b"".join(len(part).to_bytes(8, "big") + part for part in parts))


def leaf(event_hash_: bytes) -> bytes:
    return sha256(b"\x00" + event_hash_)


def micros(iso: str) -> int:
    """Microseconds since the Unix epoch of an ISO 8601 time (as a proof's event has it)."""
    moment = datetime.fromisoformat(iso)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def proof_event_hash(event: dict[str, object]) -> bytes:
    """The event hash of an inclusion proof's ``event`` object."""
    return event_hash(
        tenant=str(event["tenant_id"]), stream=str(event["stream_id"]),
        version=int(event["version"]),  # type: ignore[call-overload]
        event_id=str(event["event_id"]), type_=str(event["type"]),
        recorded_at_micros=micros(str(event["recorded_at"])),
        data=base64.b64decode(str(event["data"])), prev_hash=bytes.fromhex(str(event["prev_hash"])),
        actor=None if event.get("actor") is None else str(event["actor"]))


def export_event_hash(header: dict[str, object], line: dict[str, object]) -> bytes:
    """The event hash of an export's event line, with the file's header (its tenant)."""
    return event_hash(
        tenant=str(header["tenant"]), stream=str(line["stream"]),
        version=int(line["version"]),  # type: ignore[call-overload]
        event_id=str(line["id"]), type_=str(line["type"]),
        recorded_at_micros=int(line["recorded_at"]),  # type: ignore[call-overload]
        data=base64.b64decode(str(line["data"])), prev_hash=bytes.fromhex(str(line["prev_hash"])),
        actor=None if line.get("actor") is None else str(line["actor"]))


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of leaf hashes (RFC 9162 §2.1.1)."""
    if not leaves:
        return sha256(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node(root(leaves[:k]), root(leaves[k:]))
