"""The keyring: what wraps and unwraps data keys (`KeyProvider`), and its file (`FileKeyring`).

The file is JSON, ``{"format": "eventlog-keyring", "version": 1, "kek_id": …, "kek": …}``,
created 0600 by `init_keyring` (refusing to overwrite) and refused when group or others can
read it. The KEK is never printed: `FileKeyring`'s repr names only its id and file.
Wrapping is AES-256-GCM under the KEK with a random nonce; the associated data is the
context the log gives (tenant, subject, generation), so a wrapped key moved to another
subject's row does not unwrap.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import stat
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


class FileKeyring:
    """A `KeyProvider` whose KEK lives in a 0600 file (`init_keyring` makes one)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        kek_id, kek = _read(self.path)
        self._kek_id = kek_id
        self._kek = kek

    def __repr__(self) -> str:
        return f"FileKeyring(key_id={self._kek_id!r}, path={str(self.path)!r})"

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


def init_keyring(path: str | os.PathLike[str]) -> FileKeyring:
    """Create a keyring file at ``path`` (mode 0600) with a fresh 256-bit KEK; an existing
    file is refused (`InvalidInput`), never overwritten."""
    target = Path(path)
    body = json.dumps({"format": FORMAT, "version": 1, "kek_id": secrets.token_hex(8),
                       "kek": base64.b64encode(secrets.token_bytes(32)).decode()})
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InvalidInput("keyring", f"{str(target)!r} exists: a keyring is never "
                                      "overwritten (its data keys would be lost)") from None
    except OSError as error:
        raise InvalidInput("keyring", f"cannot create {str(target)!r}: {error}") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(body + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return FileKeyring(target)


def load_keyring(keyring: Any) -> KeyProvider:
    """A `KeyProvider` from what ``open_log(keyring=...)`` takes: a provider, or the path
    of a keyring file."""
    if isinstance(keyring, (str, os.PathLike)):
        return FileKeyring(keyring)
    if isinstance(keyring, KeyProvider):
        return keyring
    raise InvalidInput("keyring", "must be a keyring file's path or a KeyProvider "
                                  f"(key_id, wrap, unwrap), not {type(keyring).__name__}")


def _read(path: Path) -> tuple[str, bytes]:
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
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise InvalidInput("keyring", f"{str(path)!r} is not a usable keyring: "
                                      f"{error}") from None
    return kek_id, kek
