"""The key files commands are given: the operator's private key to sign with, and the
public keys an auditor checks with.

A private key is a PEM file (``openssl genpkey -algorithm ed25519``). A public key is a
PEM file (``openssl pkey -pubout``) or a verifier key, ``name+hash+base64``, as
`eventlog verifier-key` prints it and Go's ``note.NewVerifier`` reads it: one line that
names the key as well. A private key given where a public key belongs is refused: an
auditor never holds the operator's private key, and a command that quietly took one would
hide that it was handed over.

Nothing here opens a log; ``cryptography`` is loaded when a key is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from eventlog.cli.errors import CommandError
from eventlog.cli.files import read_bounded
from eventlog.errors import InvalidInput
from eventlog.signing import load_private_key, load_public_key

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PrivateKey, Ed25519PublicKey

MAX_KEY_FILE = 64 * 1024
"""A PEM key is well under a kilobyte; a bigger file is not a key."""


@dataclass(frozen=True)
class PublicKey:
    """A public key read from a file: the key, and the key name a verifier key gives
    (None for a PEM file, which names no key)."""

    key: Ed25519PublicKey
    name: str | None = None


def read_private_key_file(name: str) -> Ed25519PrivateKey:
    """The Ed25519 private key in PEM file ``name``, or one clear error naming it."""
    return load_private_key(_key_bytes(name), f"key file {name}")


def read_public_key_file(name: str) -> Ed25519PublicKey:
    """The Ed25519 public key in file ``name`` (PEM or a verifier key), or one clear
    error naming it (exit 2); a private key's file is refused."""
    return read_verifier(name).key


def read_verifier(name: str) -> PublicKey:
    """The public key in file ``name`` with the key name a verifier key gives; one clear
    error naming the file (exit 2) for anything else, a private key's PEM included."""
    from eventlog.notes import parse_verifier_key

    data = _key_bytes(name)
    if b"PRIVATE KEY-----" in data:
        raise CommandError(f"key file {name} is a private key: give the operator's public "
                           f"key (`openssl pkey -in {name} -pubout`), which cannot sign; the "
                           "private key stays with the operator")
    if b"-----BEGIN" in data:
        return PublicKey(load_public_key(data, f"key file {name}"))
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = ""
    if text.count("+") < 2:
        raise InvalidInput(f"key file {name}", "is neither a PEM public key nor a verifier "
                                               "key (NAME+HASH+BASE64)")
    key_name, key = parse_verifier_key(text, f"key file {name}")
    return PublicKey(key, key_name)


def read_witness_keys(files: list[str]) -> list[tuple[str, Ed25519PublicKey]]:
    """Each ``--witness-key`` file's public key, labelled by its file name."""
    return [(file, read_public_key_file(file)) for file in files]


def _key_bytes(name: str) -> bytes:
    try:
        return read_bounded(name, "key file", MAX_KEY_FILE)
    except CommandError as error:
        if error.message.startswith("cannot read"):
            raise
        raise InvalidInput(f"key file {name}", "is too large to be a PEM key") from None
