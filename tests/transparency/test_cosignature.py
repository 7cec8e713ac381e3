"""Witness cosignatures (C2SP tlog-cosignature, ``cosignature/v1``): what `eventlog.notes`
writes and reads, held to an independent implementation of the format written here from
the spec (key ID ``SHA-256(name || "\\n" || 0x04 || key)[:4]``, an 8-byte big-endian
timestamp, Ed25519 over ``"cosignature/v1\\ntime T\\n" || body``), not to the code under test."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from eventlog import notes
from eventlog.errors import InvalidInput

BODY = "example.org/eventlog/acme\n12\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
WITNESS = "witness.example.org/w1"


def raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)


def spec_line(name: str, key: Ed25519PrivateKey, body: str, timestamp: int) -> str:
    """A cosignature line made by the spec alone."""
    key_id = hashlib.sha256(name.encode() + b"\n\x04" + raw(key)).digest()[:4]
    message = b"cosignature/v1\ntime " + str(timestamp).encode() + b"\n" + body.encode()
    blob = key_id + timestamp.to_bytes(8, "big") + key.sign(message)
    return "\u2014 " + name + " " + base64.b64encode(blob).decode() + "\n"


def spec_check(line: str, key: Ed25519PrivateKey, body: str) -> int | None:
    """The timestamp of a cosignature line that holds by the spec alone; None if not."""
    dash, name, stamp = line.rstrip("\n").split(" ")
    blob = base64.b64decode(stamp)
    if dash != "\u2014" or len(blob) != 76 or \
            blob[:4] != hashlib.sha256(name.encode() + b"\n\x04" + raw(key)).digest()[:4]:
        return None
    timestamp = int.from_bytes(blob[4:12], "big")
    message = f"cosignature/v1\ntime {timestamp}\n{body}".encode()
    try:
        key.public_key().verify(blob[12:], message)
    except Exception:
        return None
    return timestamp


@pytest.fixture
def head() -> str:
    return notes.sign_checkpoint(notes.parse_checkpoint(BODY), "example.org/eventlog",
                                 Ed25519PrivateKey.generate())


def test_our_cosignature_holds_by_the_spec(head: str) -> None:
    """cosign_note appends one line the spec's own check accepts, with its timestamp;
    the operator's signature line is kept as it was."""
    witness = Ed25519PrivateKey.generate()
    cosigned = notes.cosign_note(head, WITNESS, witness, 1679315147)
    assert cosigned.startswith(head)
    line = cosigned[len(head):]
    assert (1, 1679315147) == (line.count("\n"), spec_check(line, witness, BODY))
    assert spec_check(line, Ed25519PrivateKey.generate(), BODY) is None
    assert spec_check(line, witness, BODY.replace("12", "13")) is None


def test_a_cosignature_made_by_the_spec_is_read(head: str) -> None:
    """A line made by the spec alone is found, with its name and time; one of another key,
    or on another body, is ignored."""
    witness, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    text = head + spec_line(WITNESS, witness, BODY, 1700000000) + spec_line(
        "w2", other, BODY, 1700000001) + spec_line("w3", witness, BODY + "x\n", 1700000002)
    found = notes.cosignatures(notes.parse_note(text), witness.public_key())
    assert [notes.Cosignature(WITNESS, 1700000000)] == found
    assert [] == notes.cosignatures(notes.parse_note(head), witness.public_key())


def test_the_specs_example_line_decodes() -> None:
    """The spec's example cosignature line: a 4-byte key ID, then the timestamp
    1679315147 big-endian, then a 64-byte signature (its key is not published)."""
    stamp = ("jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZ"
             "qhf5nNo0xUe+mbIUBkBIfZ+qnA==")
    example = ("example.com/behind-the-sofa\n20852163\n"
               "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n"
               f"\u2014 witness.example.com/w1 {stamp}\n")
    ((name, key_id, blob),) = notes.parse_note(example).signatures
    assert (name, len(key_id), len(blob), int.from_bytes(blob[:8], "big")) == (
        "witness.example.com/w1", 4, 72, 1679315147)


def test_cosigning_again_replaces_the_witness_line(head: str) -> None:
    """A witness that cosigns a head it cosigned before leaves one line of its own, the
    newer; another witness's line stays."""
    witness, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    once = notes.cosign_note(notes.cosign_note(head, "w2", other, 5), WITNESS, witness, 10)
    twice = notes.cosign_note(once, WITNESS, witness, 20)
    note = notes.parse_note(twice)
    assert ([notes.Cosignature(WITNESS, 20)], [notes.Cosignature("w2", 5)], 3) == (
        notes.cosignatures(note, witness.public_key()),
        notes.cosignatures(note, other.public_key()), len(note.signatures))


def test_a_cosignature_is_not_the_operators_signature(head: str) -> None:
    """The 0x04 key ID keeps a witness's line from passing for an operator signature of
    the same key and name, and the reverse."""
    key = Ed25519PrivateKey.generate()
    signed = notes.sign_checkpoint(notes.parse_checkpoint(BODY), WITNESS, key)
    cosigned = notes.cosign_note(head, WITNESS, key, 1)
    assert (False, []) == (notes.open_note(notes.parse_note(cosigned), WITNESS, key.public_key()),
                           notes.cosignatures(notes.parse_note(signed), key.public_key()))


@pytest.mark.parametrize("timestamp", [-1, 1 << 63])
def test_a_timestamp_out_of_range_is_refused(head: str, timestamp: int) -> None:
    with pytest.raises(InvalidInput, match=r"^timestamp: "):
        notes.cosign_note(head, WITNESS, Ed25519PrivateKey.generate(), timestamp)
