"""Proof documents an auditor keeps and checks, with no database: an inclusion proof (one
event, its envelope and hash, under a signed head) and a consistency proof (an older
signed head is a prefix of a newer one), as small JSON documents; the checks, and the
decisions of a minimal witness.

Everything here is pure: the tree math (`eventlog.merkle`), the chain hash
(`eventlog.hashing`), the signed notes (`eventlog.notes`, which loads `cryptography`
only to check a signature) and the writer's event signatures (`eventlog.writer_keys`: an
inclusion proof carries its event's, and `check_writer_signature` tells a forged event
from a real one with the writer's public key). Nothing opens or creates a log.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from eventlog.errors import InvalidInput
from eventlog.hashing import event_hash
from eventlog.merkle import (
    HASH_SIZE,
    InclusionProof,
    consistency_holds,
    inclusion_holds,
    leaf_hash,
)
from eventlog.notes import (
    Checkpoint,
    Cosignature,
    cosignatures,
    decode_tenant,
    note_signed_by,
    parse_checkpoint,
    parse_note,
)

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PublicKey
    from eventlog.writer_keys import WriterKeys

__all__ = [
    "CONSISTENCY", "INCLUSION", "ProofFailed", "SignedHead", "check_consistency", "check_inclusion",
    "check_writer_signature", "consistency_document", "decode_document", "decode_hashes",
    "inclusion_document", "open_head", "require_cosignatures", "witness_decision",
]

INCLUSION = "eventlog.inclusion_proof/v1"
CONSISTENCY = "eventlog.consistency_proof/v1"
_ENVELOPE = ("event_id", "tenant_id", "stream_id", "version", "recorded_at", "type")


class ProofFailed(Exception):
    """A proof, a signature or a witness check that does not hold (the check ran; the
    answer is no). ``str()`` says what failed."""


@dataclasses.dataclass(frozen=True)
class SignedHead:
    """A signed head opened: the key ``name`` it is signed under, the tenant its origin
    names (None when its origin names none: a checkpoint of another kind of log), its
    checkpoint, and the note's text as signed."""

    name: str
    tenant_id: str | None
    checkpoint: Checkpoint
    note: str


def open_head(text: str, key: Ed25519PublicKey | None, field: str = "head",
              name: str | None = None) -> SignedHead:
    """The signed head in ``text``; `InvalidInput` naming ``field`` if the text is not a
    checkpoint in a signed note.

    With ``key``, the note must be signed by it (`ProofFailed` otherwise) under ``name``
    when given (a verifier key names its key), else under the head's origin, the key name
    C2SP ``tlog-checkpoint`` recommends and `eventlog tree-head` signs under, or (a head
    signed before that) under a name the origin extends as ``NAME/TENANT``. Signatures of
    other keys are ignored, however many. Without ``key`` the head is only parsed, and must
    carry a signature line under one of those names."""
    note = parse_note(text, field)
    checkpoint = parse_checkpoint(note.text, field)
    origin = checkpoint.origin
    signers = [signer for signer, _, _ in note.signatures]
    names = [name] if name is not None else [origin, *dict.fromkeys(
        signer for signer in signers if _extends(origin, signer))]
    if key is None:
        found = [candidate for candidate in names if candidate in signers]
        if not found:
            raise InvalidInput(field, f"has no signature under its origin {origin!r} (the key "
                                      "name of a head that `eventlog tree-head` signs)"[:300])
        return SignedHead(found[0], _tenant(origin, found[0]), checkpoint, text)
    said = {candidate: note_signed_by(note, candidate, key) for candidate in names}
    if False in said.values():
        raise ProofFailed(f"{field}: its signature by the given key does not hold: the head "
                          "was changed after it was signed")
    signed = [candidate for candidate, holds in said.items() if holds]
    if not signed:
        under = f"under {name!r}" if name is not None else f"under its origin {origin!r}"
        raise ProofFailed(f"{field}: no signature on it is the given key's {under} (another "
                          "key signed it, or under another name)"[:300])
    return SignedHead(signed[0], _tenant(origin, signed[0]), checkpoint, text)


def _extends(origin: str, name: str) -> bool:
    """Whether ``origin`` is ``name/SOMETHING`` (a head signed before key name = origin)."""
    return origin.startswith(name + "/") and len(origin) > len(name) + 1


def _tenant(origin: str, name: str) -> str | None:
    """The tenant a head's origin names: its last segment decoded (`decode_tenant`), or,
    for a head signed under the log's name, what follows ``name/`` as it is."""
    if _extends(origin, name):
        return origin[len(name) + 1 :]
    log, slash, segment = origin.rpartition("/")
    return decode_tenant(segment) if slash and log else None


def require_cosignatures(head: SignedHead, witnesses: Sequence[tuple[str, Ed25519PublicKey]],
                         field: str = "head") -> list[Cosignature]:
    """The newest valid ``cosignature/v1`` of each witness key on ``head`` (each given as
    ``(label, public key)``, the label naming it in a refusal); `ProofFailed` naming the
    first witness whose cosignature the head does not carry."""
    note = parse_note(head.note, field)
    found = []
    for label, key in witnesses:
        signed = cosignatures(note, key)
        if not signed:
            raise ProofFailed(f"{field} carries no valid cosignature of the witness key "
                              f"{label} (the witness never accepted this head, or it was "
                              "changed after it was cosigned)")
        found.append(max(signed, key=lambda c: c.timestamp))
    return found


def inclusion_document(head: SignedHead, event: Any, proof: InclusionProof) -> dict[str, Any]:
    """The inclusion proof of ``event`` (a stored or recorded event) under ``head``."""
    return {
        "type": INCLUSION,
        "origin": head.checkpoint.origin,
        "tree_size": proof.size,
        "leaf_index": proof.leaf_index,
        "path": [_b64(h) for h in proof.path],
        "event": {
            "event_id": str(event.event_id), "tenant_id": event.tenant_id,
            "stream_id": event.stream_id, "version": event.version,
            "recorded_at": event.recorded_at.isoformat(), "type": event.type,
            "data": _b64(event.data), "prev_hash": event.prev_hash.hex(),
            **({} if event.actor is None else {"actor": event.actor}),
            **({} if event.signature is None else {"signature": event.signature.hex()}),
        },
        "event_hash": event.hash.hex(),
    }


def consistency_document(old: SignedHead, new: SignedHead, proof: list[bytes]) -> dict[str, Any]:
    """The consistency proof from the signed head ``old`` to ``new`` (the old head travels
    whole, signature and all, so the checker needs no other file)."""
    return {
        "type": CONSISTENCY,
        "origin": new.checkpoint.origin,
        "old_size": old.checkpoint.size,
        "new_size": new.checkpoint.size,
        "proof": [_b64(h) for h in proof],
        "old_head": old.note,
    }


def decode_document(data: bytes, field: str = "proof") -> dict[str, Any]:
    """A proof document's JSON object; `InvalidInput` naming ``field`` if it is none."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidInput(field, f"is not JSON ({error})") from None
    except ValueError:  # json refuses a number of more than 4,300 digits
        raise InvalidInput(field, "is not a proof: it holds a number thousands of digits "
                                  "long") from None
    except RecursionError:
        raise InvalidInput(field, "is not a proof: its JSON is nested deeper than a proof's "
                                  "few levels") from None
    if not isinstance(document, dict) or document.get("type") not in (INCLUSION, CONSISTENCY):
        raise InvalidInput(field, f"is not an eventlog proof (its type must be {INCLUSION} or "
                                  f"{CONSISTENCY})")
    return document


def check_inclusion(document: dict[str, Any], head: SignedHead) -> str:
    """Check an inclusion proof against an opened (signature-checked) head: the event's
    envelope hashes to its hash, which is leaf ``leaf_index`` of the head's tree.
    What it proved, as a sentence; `ProofFailed` if it does not hold, `InvalidInput` if the
    document is malformed."""
    size = _int(document, "tree_size")
    index = _int(document, "leaf_index")
    path = _hashes(document, "path")
    event = _event(document)
    stated = _hash(document.get("event_hash"), "event_hash")
    _same_origin(document, head)
    if head.tenant_id is None:
        raise ProofFailed(f"the head's origin {head.checkpoint.origin!r} names no tenant: "
                          "it is not the head of an eventlog tenant's tree")
    if event["tenant_id"] != head.tenant_id:
        raise ProofFailed(f"the event is of tenant {event['tenant_id']!r}, the head of "
                          f"{head.tenant_id!r}")
    if size != head.checkpoint.size:
        raise ProofFailed(f"the proof is for a tree of {size} events, the head is of "
                          f"{head.checkpoint.size}")
    if event_hash(**event) != stated:
        raise ProofFailed("the event's envelope and data do not hash to its event_hash")
    if not inclusion_holds(leaf_hash(stated), index, size, path, head.checkpoint.root):
        raise ProofFailed(f"the path does not lead from leaf {index} to the head's root: the "
                          "event is not in the tree this head signs")
    return (f"event {event['event_id']} (stream {event['stream_id']!r} v{event['version']}) "
            f"is leaf {index} of the {size}-event tree of {head.checkpoint.origin}")


def check_writer_signature(document: dict[str, Any], keys: WriterKeys) -> str:
    """Check the writer signature an inclusion proof's event carries against the writer
    public ``keys`` (an auditor's: no secret): what it proved, as a sentence; `ProofFailed`
    saying ``forged`` or ``unsigned`` if the event is not the application's. Call it after
    `check_inclusion`, which ties ``event_hash`` to the event's envelope."""
    event = document.get("event")
    signature = event.get("signature") if isinstance(event, dict) else None
    stated = _hash(document.get("event_hash"), "event_hash")
    if signature is None:
        raise ProofFailed("unsigned: the event carries no writer signature (it was not "
                          "appended by the application's writer key: written before signing "
                          "began, or inserted behind the application)")
    try:
        raw = bytes.fromhex(signature)
    except (TypeError, ValueError):
        raise InvalidInput("proof", f"has a signature that is not hex: {signature!r}"[:200]
                           ) from None
    why = keys.check(stated, raw)
    if why is not None:
        raise ProofFailed(f"forged: {why}")
    return f"signed by writer key {raw[:8].hex()}"


def check_consistency(document: dict[str, Any], head: SignedHead,
                      key: Ed25519PublicKey, name: str | None = None) -> str:
    """Check a consistency proof: its old head is signed by ``key`` (under ``name`` when
    given, as `open_head` reads it) and of the same origin, and its tree is a prefix of
    ``head``'s. What it proved; `ProofFailed` if not."""
    old_text = document.get("old_head")
    if not isinstance(old_text, str):
        raise InvalidInput("proof", "has no old_head (the older signed head, as text)")
    old = open_head(old_text, key, "proof's old_head", name)
    _same_origin(document, head)
    if old.checkpoint.origin != head.checkpoint.origin:
        raise ProofFailed(f"the old head is of {old.checkpoint.origin!r}, the head of "
                          f"{head.checkpoint.origin!r}")
    if (_int(document, "old_size"), _int(document, "new_size")) != (
            old.checkpoint.size, head.checkpoint.size):
        raise ProofFailed(f"the proof is from size {document['old_size']} to "
                          f"{document['new_size']}, the heads are of {old.checkpoint.size} "
                          f"and {head.checkpoint.size}")
    return consistent(old.checkpoint, head.checkpoint, _hashes(document, "proof"))


def consistent(old: Checkpoint, new: Checkpoint, proof: list[bytes]) -> str:
    """That ``new``'s tree extends ``old``'s, as a sentence; `ProofFailed` naming both sizes
    for a rollback (a smaller new tree) or a fork (a proof that does not hold)."""
    if new.size < old.size:
        raise ProofFailed(f"rollback: the new head is of {new.size} events, smaller than the "
                          f"{old.size} of the head already seen")
    if not consistency_holds(old.size, new.size, old.root, new.root, proof):
        raise ProofFailed(f"fork: the tree of {new.size} events does not extend the tree of "
                          f"{old.size} events already seen (the proof does not hold)")
    return f"the {new.size}-event tree of {new.origin} extends its {old.size}-event tree"


def witness_decision(kept: Checkpoint | None, new: Checkpoint,
                     proof: list[bytes] | None) -> str:
    """A witness's answer to ``new`` given the head it keeps for the origin: a sentence if
    ``new`` may replace it, `ProofFailed` (naming both sizes) for a rollback or a fork, or a
    new head without the consistency proof it needs."""
    if kept is None:
        return f"first head of {new.origin} (size {new.size}): kept"
    if new.size == kept.size:
        if new.root != kept.root:
            raise ProofFailed(f"fork: two heads of {new.size} events with different roots")
        return f"the same head of {new.origin} (size {new.size}) as kept"
    if new.size > kept.size and proof is None:
        raise ProofFailed(f"the head grows from {kept.size} to {new.size} events: give the "
                          "consistency proof between them (--proof)")
    return consistent(kept, new, proof or [])


def _same_origin(document: dict[str, Any], head: SignedHead) -> None:
    if document.get("origin") != head.checkpoint.origin:
        raise ProofFailed(f"the proof is for {document.get('origin')!r}, the head for "
                          f"{head.checkpoint.origin!r}")


def _event(document: dict[str, Any]) -> dict[str, Any]:
    event = document.get("event")
    if not isinstance(event, dict):
        raise InvalidInput("proof", "has no event envelope")
    try:
        for name in _ENVELOPE:
            if name not in event:
                raise KeyError(name)
        fields: dict[str, Any] = {name: event[name] for name in _ENVELOPE}
        fields["event_id"] = uuid.UUID(event["event_id"])
        fields["recorded_at"] = datetime.fromisoformat(event["recorded_at"])
        fields["data"] = base64.b64decode(event["data"], validate=True)
        fields["prev_hash"] = _hash_hex(event["prev_hash"])
        fields["actor"] = event.get("actor")  # who appended it; absent when none was named
        if fields["actor"] is not None and not isinstance(fields["actor"], str):
            raise ValueError("the actor is not a string")
        if not all(isinstance(fields[n], str) for n in ("tenant_id", "stream_id", "type")) or \
                isinstance(fields["version"], bool) or not isinstance(fields["version"], int):
            raise ValueError("a field of the wrong type")
    except (KeyError, ValueError, TypeError, binascii.Error) as error:
        raise InvalidInput("proof", f"has a malformed event envelope ({error})") from None
    return fields


def _int(document: dict[str, Any], name: str) -> int:
    value = document.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
        shown = repr(value) if not isinstance(value, int) or value < 1 << 64 else "a larger one"
        raise InvalidInput("proof", f"{name} must be a whole number from 0 to 2**64 - 1, not "
                                    f"{shown}"[:200])
    return value


def decode_hashes(document: dict[str, Any], name: str) -> list[bytes]:
    """The list of base64 hashes under ``name``; `InvalidInput` if it is not one."""
    return _hashes(document, name)


def _hashes(document: dict[str, Any], name: str) -> list[bytes]:
    values = document.get(name)
    if not isinstance(values, list) or len(values) > 128:
        raise InvalidInput("proof", f"{name} must be a list of base64 hashes")
    return [_hash(value, name) for value in values]


def _hash(value: Any, name: str) -> bytes:
    try:
        raw = (bytes.fromhex(value) if name == "event_hash"
               else base64.b64decode(value, validate=True))
    except (TypeError, ValueError, binascii.Error):
        raw = b""
    if len(raw) != HASH_SIZE:
        raise InvalidInput("proof", f"{name} holds {value!r}, not a SHA-256 hash"[:200])
    return raw


def _hash_hex(value: Any) -> bytes:
    raw = bytes.fromhex(value)
    if len(raw) != HASH_SIZE:
        raise ValueError("prev_hash is not a SHA-256 hash")
    return raw


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
