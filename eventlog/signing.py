"""Ed25519 keys and signatures for digests: the operator signs, an auditor checks.

A digest's own SHA-256 only shows the file is self-consistent: whoever edits the heads
can recompute it. A signature made with a private key the operator keeps cannot be
recomputed by someone who edits the file; an auditor holding only the public key can
check it and cannot forge one.

Keys are PEM files, as ``openssl`` writes them::

    openssl genpkey -algorithm ed25519 -out digest-key.pem          # private: keep it
    openssl pkey -in digest-key.pem -pubout -out digest-key.pub.pem  # public: for auditors

or `generate_key_pair`. A key is named by its *key id*: the first 16 hex digits of the
SHA-256 of its raw 32-byte public key.

``cryptography`` is imported when a key is first generated, loaded or used (not with this
module, which the command's ``digest`` and ``verify`` import for their options):
`Ed25519PrivateKey` and `Ed25519PublicKey` are its classes, loaded on first use (PEP 562).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from eventlog.errors import InvalidInput

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey as Ed25519PrivateKey,
    )
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PublicKey as Ed25519PublicKey,
    )

ALGORITHM = "ed25519"

__all__ = [
    "ALGORITHM", "Ed25519PrivateKey", "Ed25519PublicKey", "generate_key_pair", "key_id",
    "load_private_key", "load_public_key", "sign", "signature_holds",
]


if not TYPE_CHECKING:  # type checkers read the imports above

    def __getattr__(name: str) -> Any:
        if name not in ("Ed25519PrivateKey", "Ed25519PublicKey"):
            raise AttributeError(f"module 'eventlog.signing' has no attribute {name!r}")
        from cryptography.hazmat.primitives.asymmetric import ed25519

        return getattr(ed25519, name)


def generate_key_pair() -> tuple[bytes, bytes]:
    """A new key pair as PEM: (private key, unencrypted PKCS #8; public key,
    SubjectPublicKeyInfo), the formats ``openssl genpkey``/``openssl pkey -pubout`` write."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    return (
        private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()),
        private.public_key().public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo),
    )


def load_private_key(pem: bytes, field: str = "key") -> Ed25519PrivateKey:
    """An Ed25519 private key from its (unencrypted) PEM; `InvalidInput` naming ``field``
    for anything else (a public key, another algorithm, an encrypted key, not PEM)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError as error:  # encrypted
        raise InvalidInput(field, f"is an encrypted private key ({error})") from None
    except (ValueError, UnsupportedAlgorithm):
        raise InvalidInput(field, _not_a_key(pem, "private")) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(field, f"is a {type(key).__name__.removeprefix('_')}, not an "
                                  "Ed25519 private key")
    return key


def load_public_key(pem: bytes, field: str = "key") -> Ed25519PublicKey:
    """An Ed25519 public key from its PEM (a private key's PEM gives its public key);
    `InvalidInput` naming ``field`` for anything else."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if b"PRIVATE KEY-----" in pem:
        return load_private_key(pem, field).public_key()
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm):
        raise InvalidInput(field, _not_a_key(pem, "public")) from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput(field, f"is a {type(key).__name__.removeprefix('_')}, not an "
                                  "Ed25519 public key")
    return key


def _not_a_key(pem: bytes, kind: str) -> str:
    if b"-----BEGIN" not in pem:
        return f"is not a PEM file (expected an Ed25519 {kind} key)"
    return f"is not an Ed25519 {kind} key in PEM"


def key_id(key: Ed25519PublicKey | Ed25519PrivateKey) -> str:
    """The key's id: 16 hex digits of the SHA-256 of its raw public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(key: Ed25519PrivateKey, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``message``."""
    return key.sign(message)


def signature_holds(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is ``key``'s signature of exactly ``message``."""
    from cryptography.exceptions import InvalidSignature

    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True
