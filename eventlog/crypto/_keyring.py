"""The keyring: what wraps and unwraps data keys (`KeyProvider`) and, optionally, holds the
application's writer key that signs every append (`WriterKeyProvider`); and its file
(`FileKeyring`).

The file is JSON, ``{"format": "eventlog-keyring", "version": 1, "kek_id": …, "kek": …,
"writer": …, "retired_writers": […]}``, created 0600 by `init_keyring` (refusing to
overwrite) and refused when group or others can read it. Neither secret is ever printed:
`FileKeyring`'s repr names only ids and the file. Wrapping is AES-256-GCM under the KEK
with a random nonce; the associated data is the context the log gives (tenant, subject,
generation), so a wrapped key moved to another subject's row does not unwrap.

The writer key (``writer``: a raw 32-byte Ed25519 private key, base64) signs each event's
chain hash (`eventlog.writer_keys`). A keyring made before writer keys existed has none:
`add_writer_key` gives it one (``eventlog keys init-writer``), and the log it opens is
signed from its next append. `rotate_writer_key` makes a new one and keeps the old public
key (``retired_writers``), so the events it signed still check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from eventlog.errors import InvalidInput

KEYRING_ENV = "EVENTLOG_KEYRING"
"""The environment variable the CLI reads a keyring file's path from."""
FORMAT = "eventlog-keyring"
_NONCE = 12


@runtime_checkable
class KeyProvider(Protocol):
    """Wraps and unwraps data keys under a key-encryption key the log never sees.

    ``key_id`` names the KEK (stored beside each wrapped key, so a rotation knows what is
    done). ``wrap`` returns opaque bytes that ``unwrap`` turns back into the data key given
    the same ``context``; ``unwrap`` raises any exception when it cannot (another KEK, a
    changed context, damaged bytes). A KMS plugs in by calling its Encrypt/Decrypt with
    ``context`` as the encryption context.
    """

    @property
    def key_id(self) -> str: ...

    def wrap(self, data_key: bytes, context: bytes) -> bytes: ...

    def unwrap(self, wrapped: bytes, context: bytes) -> bytes: ...


@runtime_checkable
class WriterKeyProvider(KeyProvider, Protocol):
    """A `KeyProvider` that also holds the application's writer key: the optional signing
    capability of a keyring (a log opened with one signs every append).

    ``writer_public_key`` is the current writer key's 32 raw Ed25519 public bytes (None:
    this keyring holds no writer key, and the log signs nothing); ``writer_public_keys``
    every public key whose signatures the log accepts, the current one first, then the
    retired ones; ``sign_as_writer`` the current key's 64-byte Ed25519 signature of a
    message. A KMS plugs in with an asymmetric Ed25519 key: its Sign call, and its public
    key fetched once.
    """

    @property
    def writer_public_key(self) -> bytes | None: ...

    @property
    def writer_public_keys(self) -> Sequence[bytes]: ...

    def sign_as_writer(self, message: bytes) -> bytes: ...


@dataclass
class _Ring:
    """A keyring file's contents."""

    kek_id: str
    kek: bytes
    writer: bytes | None = None
    """The writer key's raw private bytes, if the file holds one."""
    retired: list[bytes] = field(default_factory=list)
    """Raw public keys of earlier writer keys."""

    def body(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": 1, "kek_id": self.kek_id,
                "kek": _b64(self.kek),
                **({} if self.writer is None else {"writer": _b64(self.writer)}),
                **({"retired_writers": [_b64(key) for key in self.retired]}
                   if self.retired else {})}


class FileKeyring:
    """A `KeyProvider` whose KEK lives in a 0600 file (`init_keyring` makes one), and a
    `WriterKeyProvider` when the file holds a writer key."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        ring = _read(self.path)
        self._kek_id = ring.kek_id
        self._kek = ring.kek
        self._writer = ring.writer
        self._retired = tuple(ring.retired)
        self._signing: Any = None
        self._writer_public: bytes | None = (
            None if ring.writer is None else _public_of(ring.writer))

    def __repr__(self) -> str:
        writer = ("" if self._writer_public is None
                  else f", writer_key_id={_key_id(self._writer_public)!r}")
        return f"FileKeyring(key_id={self._kek_id!r}{writer}, path={str(self.path)!r})"

    @property
    def writer_public_key(self) -> bytes | None:
        """The writer key's raw public bytes; None when the file holds no writer key."""
        return self._writer_public

    @property
    def writer_public_keys(self) -> tuple[bytes, ...]:
        """The writer key's public key (if any), then the retired ones."""
        current = () if self._writer_public is None else (self._writer_public,)
        return (*current, *self._retired)

    def sign_as_writer(self, message: bytes) -> bytes:
        """The writer key's Ed25519 signature of ``message``."""
        if self._writer is None:
            raise InvalidInput("keyring", f"{str(self.path)!r} holds no writer key (`eventlog "
                                          "keys init-writer` gives it one)")
        if self._signing is None:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

            self._signing = Ed25519PrivateKey.from_private_bytes(self._writer)
        signature: bytes = self._signing.sign(message)
        return signature

    @property
    def key_id(self) -> str:
        """The KEK's id (random, printed by ``eventlog keys init``; not secret)."""
        return self._kek_id

    def wrap(self, data_key: bytes, context: bytes) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = secrets.token_bytes(_NONCE)
        return nonce + AESGCM(self._kek).encrypt(nonce, data_key, context)

    def unwrap(self, wrapped: bytes, context: bytes) -> bytes:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        return AESGCM(self._kek).decrypt(wrapped[:_NONCE], wrapped[_NONCE:], context)


def init_keyring(path: str | os.PathLike[str], *, writer: bool = True) -> FileKeyring:
    """Create a keyring file at ``path`` (mode 0600) with a fresh 256-bit KEK and, unless
    ``writer=False``, a fresh Ed25519 writer key; an existing file is refused
    (`InvalidInput`), never overwritten."""
    target = Path(path)
    ring = _Ring(secrets.token_hex(8), secrets.token_bytes(32),
                 _new_writer() if writer else None)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidInput("keyring", f"{str(target)!r} exists: a keyring is never "
                                      "overwritten (its data keys would be lost)") from None
    except OSError as error:
        raise InvalidInput("keyring", f"cannot create {str(target)!r}: {error}") from None
    _write(fd, ring)
    return FileKeyring(target)


def add_writer_key(path: str | os.PathLike[str]) -> FileKeyring:
    """Give the keyring file at ``path`` a fresh writer key; one that holds a writer key
    already is refused (`rotate_writer_key` replaces one). The KEK is kept as it is."""
    target = Path(path)
    ring = _read(target)
    if ring.writer is not None:
        raise InvalidInput("keyring", f"{str(target)!r} holds a writer key already (key id "
                                      f"{_key_id(_public_of(ring.writer))}; `eventlog keys "
                                      "rotate-writer` replaces it)")
    ring.writer = _new_writer()
    _replace(target, ring)
    return FileKeyring(target)


def rotate_writer_key(path: str | os.PathLike[str]) -> FileKeyring:
    """Replace the writer key of the keyring file at ``path`` with a fresh one, keeping the
    old one's public key so the events it signed still check (its private key is gone:
    nothing is signed with it again)."""
    target = Path(path)
    ring = _read(target)
    if ring.writer is None:
        raise InvalidInput("keyring", f"{str(target)!r} holds no writer key to rotate "
                                      "(`eventlog keys init-writer` gives it one)")
    ring.retired.insert(0, _public_of(ring.writer))
    ring.writer = _new_writer()
    _replace(target, ring)
    return FileKeyring(target)


def keep_writer_keys(path: str | os.PathLike[str], public_keys: Sequence[bytes]) -> FileKeyring:
    """Let the keyring file at ``path`` check what ``public_keys`` (another keyring's writer
    keys, raw) signed: each it does not hold is added to its retired writer keys. What a
    rotation of the KEK to a new keyring does, so the events signed before still check."""
    target = Path(path)
    ring = _read(target)
    held = set(ring.retired) | ({_public_of(ring.writer)} if ring.writer is not None else set())
    added = [key for key in dict.fromkeys(public_keys) if key not in held]
    if any(not isinstance(key, bytes) or len(key) != 32 for key in added):
        raise InvalidInput("public_keys", "must be raw 32-byte Ed25519 public keys")
    if added:
        ring.retired.extend(added)
        _replace(target, ring)
    return FileKeyring(target)


def _new_writer() -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
        serialization.NoEncryption())


def _public_of(private: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(private).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:16]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _write(fd: int, ring: _Ring) -> None:
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(ring.body()) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _replace(target: Path, ring: _Ring) -> None:
    """Write ``ring`` over the file at ``target`` whole or not at all: a new 0600 file
    beside it, synced, renamed over it (a crash leaves the old file or the new one)."""
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:
        raise InvalidInput("keyring", f"cannot write beside {str(target)!r}: {error}") from None
    try:
        _write(fd, ring)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load_keyring(keyring: Any) -> KeyProvider:
    """A `KeyProvider` from what ``open_log(keyring=...)`` takes: a provider, or the path
    of a keyring file."""
    if isinstance(keyring, (str, os.PathLike)):
        return FileKeyring(keyring)
    if isinstance(keyring, KeyProvider):
        return keyring
    raise InvalidInput("keyring", "must be a keyring file's path or a KeyProvider "
                                  f"(key_id, wrap, unwrap), not {type(keyring).__name__}")


def _read(path: Path) -> _Ring:
    try:
        info = path.stat()
        text = path.read_text()
    except OSError as error:
        raise InvalidInput("keyring", f"cannot read {str(path)!r}: {error.strerror}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InvalidInput("keyring", f"{str(path)!r} is readable by others (mode "
                                      f"{stat.S_IMODE(info.st_mode):04o}): chmod 600 it")
    try:
        body = json.loads(text)
        if body.get("format") != FORMAT or body.get("version") != 1:
            raise ValueError("not an eventlog keyring (format 1)")
        kek = base64.b64decode(body["kek"], validate=True)
        kek_id = body["kek_id"]
        if len(kek) != 32 or not isinstance(kek_id, str) or not kek_id:
            raise ValueError("its key is not 256 bits")
        writer = (None if body.get("writer") is None
                  else base64.b64decode(body["writer"], validate=True))
        retired = [base64.b64decode(key, validate=True)
                   for key in body.get("retired_writers", [])]
        if writer is not None and len(writer) != 32:
            raise ValueError("its writer key is not a 32-byte Ed25519 key")
        if any(len(key) != 32 for key in retired):
            raise ValueError("a retired writer key is not a 32-byte Ed25519 public key")
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise InvalidInput("keyring", f"{str(path)!r} is not a usable keyring: "
                                      f"{error}") from None
    return _Ring(kek_id, kek, writer, retired)
