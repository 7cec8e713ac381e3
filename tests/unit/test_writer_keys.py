"""The writer key's signatures (eventlog.writer_keys): made and checked with nothing else,
the key named by its id, public keys read as PEM or as C2SP verifier keys."""

from __future__ import annotations

import hashlib

import pytest

from eventlog.errors import InvalidInput
from eventlog.signing import generate_key_pair, key_id, load_private_key, load_public_key
from eventlog.writer_keys import (
    DOMAIN,
    SIGNATURE_SIZE,
    EventSigner,
    WriterKeys,
    key_id_of,
    parse_writer_keys,
    public_pem,
    raw_public,
    verifier_key_line,
)

HASH = hashlib.sha256(b"an event").digest()


def _signer() -> tuple[EventSigner, WriterKeys]:
    private = load_private_key(generate_key_pair()[0])
    public = private.public_key()
    return EventSigner(private.sign, raw_public(public)), WriterKeys([public])


def test_a_signature_is_the_key_id_then_ed25519_over_the_domain_and_hash() -> None:
    """72 bytes: the key's 8-byte id (`signing.key_id` in hex), then the signature of
    DOMAIN || hash, which the public key checks."""
    signer, keys = _signer()
    signature = signer(HASH)
    [public] = keys.public_keys()
    public.verify(signature[8:], DOMAIN + HASH)
    assert (SIGNATURE_SIZE, key_id(public), None) == (
        len(signature), signature[:8].hex(), keys.check(HASH, signature))


def test_what_does_not_hold_says_why() -> None:
    """Another hash, a changed byte, another key's id, or a short value: each named."""
    signer, keys = _signer()
    signature = signer(HASH)
    other, _ = _signer()
    found = [keys.check(hashlib.sha256(b"x").digest(), signature),
             keys.check(HASH, signature[:-1] + bytes([signature[-1] ^ 1])),
             keys.check(HASH, other(HASH)), keys.check(HASH, signature[:40])]
    assert ["not writer key", "not writer key", "not a writer key given", "40 bytes"] == [
        next(part for part in ("not a writer key given", "not writer key", "40 bytes")
             if part in (why or "")) for why in found]


def test_a_pair_that_held_is_remembered_and_forgotten_on_request() -> None:
    """A (hash, signature) that held is not checked again until `forget_checked`."""
    signer, keys = _signer()
    signature = signer(HASH)
    keys.check(HASH, signature)
    remembered = len(keys._held)
    keys.forget_checked()
    assert (1, 0) == (remembered, len(keys._held))


def test_public_keys_read_as_pem_or_verifier_keys() -> None:
    """A file of PEM blocks and verifier-key lines gives each key; a comment line's key
    is ignored; a verifier key whose hash does not match its name is refused."""
    _, keys = _signer()
    _, more = _signer()
    [one], [two] = keys.public_keys(), more.public_keys()
    text = (f"# verifier key: {verifier_key_line(one)}\n{public_pem(one)}"
            f"{verifier_key_line(two, 'example.org/w')}\n")
    found = [key_id_of(key) for key in parse_writer_keys(text)]
    line = verifier_key_line(two, "example.org/w")
    name, hashed, encoded = line.split("+", 2)
    with pytest.raises(InvalidInput, match="does not match"):
        parse_writer_keys(f"{name}x+{hashed}+{encoded}")
    with pytest.raises(InvalidInput, match="holds no public key"):
        parse_writer_keys("nothing here")
    assert [key_id_of(one), key_id_of(two)] == found


def test_a_private_pem_gives_its_public_key() -> None:
    """A private key's PEM given as a writer key is read as its public key (as
    `signing.load_public_key` does)."""
    private_pem, public_pem_bytes = generate_key_pair()
    assert [key_id_of(load_public_key(public_pem_bytes))] == [
        key_id_of(key) for key in parse_writer_keys(private_pem.decode())]
