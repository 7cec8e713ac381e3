"""Signed tree heads: C2SP signed notes and checkpoints (`eventlog.notes`)."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from eventlog import notes
from eventlog.errors import InvalidInput
from eventlog.signing import Ed25519PrivateKey

# Go's golang.org/x/mod/sumdb/note example key and note (its package example).
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_NOTE = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
    "\n"
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZ"
    "SNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def go_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(base64.b64decode(GO_SKEY.split("+", 4)[4])[1:])


def test_key_hash_and_verifier_key_match_go() -> None:
    """The key hash and verifier key string are the ones Go's sumdb/note computes."""
    assert GO_VKEY == notes.verifier_key("PeterNeumann", go_key().public_key())


def test_a_note_go_signed_opens() -> None:
    """A note signed by Go's sumdb/note verifies here; a changed text or another name does not."""
    public = go_key().public_key()
    note = notes.parse_note(GO_NOTE)
    changed = notes.parse_note(GO_NOTE.replace("problem,", "problem;"))
    assert [True, False, False] == [
        notes.open_note(note, "PeterNeumann", public),
        notes.open_note(changed, "PeterNeumann", public),
        notes.open_note(note, "Someone", public),
    ]


def test_a_signed_checkpoint_round_trips() -> None:
    """A signed head parses back to its origin, size and root, and its signature holds."""
    key = Ed25519PrivateKey.generate()
    head = notes.Checkpoint("example.org/log/acme", 12, bytes(range(32)))
    text = notes.sign_checkpoint(head, "example.org/log", key)
    note = notes.parse_note(text)
    assert text.startswith("example.org/log/acme\n12\n"
                           "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\n"
                           "\u2014 example.org/log ")
    assert head == notes.parse_checkpoint(note.text)
    assert notes.open_note(note, "example.org/log", key.public_key())
    assert not notes.open_note(note, "example.org/log", Ed25519PrivateKey.generate().public_key())


@pytest.mark.parametrize("text", [
    "no blank line\n\u2014 a AAAAAAA=\n",
    "origin\n1\nAAAA\n\n- a AAAAAAAA\n",
    "origin\n1\nAAAA\n\n\u2014 a !!!!\n",
    "origin\n1\nAAAA\n\n",
])
def test_a_malformed_note_is_bad_input(text: str) -> None:
    """A text that is not a signed note is refused as bad input naming the head."""
    with pytest.raises(InvalidInput, match=r"^head: "):
        notes.parse_note(text)


@pytest.mark.parametrize("body", ["o\n", "o\n-1\nAAAA\n", "o\n01\n" + "A" * 44 + "\n",
                                  "o\n1\nAAAA\n", "\n1\n" + "A" * 43 + "=\n"])
def test_a_malformed_checkpoint_is_bad_input(body: str) -> None:
    """A note text without an origin, a decimal size and a 32-byte base64 root is refused."""
    with pytest.raises(InvalidInput, match=r"^head: "):
        notes.parse_checkpoint(body)


def test_a_key_name_with_a_space_is_refused() -> None:
    """Names with spaces or '+' cannot name a signed-note key."""
    with pytest.raises(InvalidInput, match=r"^name: "):
        notes.origin_for("my log", "acme")


@pytest.mark.parametrize("tenant", ["acme", "a b+c", "zürich/ops 100%", "~._-", "%41", ""])
def test_any_tenant_id_gives_an_origin_that_is_a_key_name(tenant: str) -> None:
    """The origin's last segment is the id percent-encoded (RFC 3986's unreserved kept),
    a valid key name, and decodes back to the id."""
    origin = notes.origin_for("example.org/log", tenant)
    segment = origin.removeprefix("example.org/log/")
    assert (notes.check_name(origin), quote(tenant, safe=""), tenant) == (
        origin, segment, notes.decode_tenant(segment) if tenant else "")


@pytest.mark.parametrize("segment", ["a b", "a+b", "%4", "%zz", "%e2", "%41x%4a", "%FF"])
def test_a_segment_no_tenant_encodes_to_names_none(segment: str) -> None:
    """A space or '+', a broken or lower-case escape, bytes that are not UTF-8: None."""
    assert notes.decode_tenant(segment) is None


def test_a_note_with_a_control_character_or_too_many_signatures_is_refused() -> None:
    """signed-note: no ASCII control but newline; at most 100 signature lines (as Go's
    note.Open), while 16 and more are read."""
    key = Ed25519PrivateKey.generate()
    text = notes.sign_checkpoint(notes.Checkpoint("o/t", 1, bytes(32)), "o/t", key)
    line = text.split("\n\n")[1]
    assert 17 == len(notes.parse_note(text + line * 16).signatures)
    for bad in (text.replace("o/t\n", "o/t\r\n", 1), text + line * 100):
        with pytest.raises(InvalidInput, match=r"^head: "):
            notes.parse_note(bad)


def test_a_failing_signature_of_the_known_key_refuses_the_note() -> None:
    """A valid line of the key and a second line of the same key that does not verify:
    the note is refused (signed-note: "clients SHOULD reject the whole note"); lines of
    other keys are ignored."""
    key = Ed25519PrivateKey.generate()
    text = notes.sign_checkpoint(notes.Checkpoint("o/t", 1, bytes(32)), "o/t", key)
    stranger = notes.sign_checkpoint(notes.Checkpoint("x", 2, bytes(32)), "o/t",
                                     Ed25519PrivateKey.generate()).split("\n\n")[1]
    forged = notes.sign_checkpoint(notes.Checkpoint("x", 2, bytes(32)), "o/t",
                                   key).split("\n\n")[1]
    assert [True, False] == [
        notes.open_note(notes.parse_note(text + stranger), "o/t", key.public_key()),
        notes.open_note(notes.parse_note(text + forged), "o/t", key.public_key())]


def test_a_verifier_key_reads_back() -> None:
    """parse_verifier_key reads Go's example verifier key and ours; a wrong key hash is
    refused naming it."""
    name, public = notes.parse_verifier_key(GO_VKEY)
    assert (name, notes.verifier_key(name, public)) == ("PeterNeumann", GO_VKEY)
    with pytest.raises(InvalidInput, match="key hash 00000000"):
        notes.parse_verifier_key(GO_VKEY.replace("c74f20a3", "00000000"))
