"""Encryption under per-subject data keys (issue 32): the keyring and the sealing of bytes.

A *keyring* holds a key-encryption key (KEK) that wraps and unwraps data keys
(`KeyProvider`; `FileKeyring` keeps its KEK in a 0600 file, a KMS or Vault can stand in).
Each (tenant, subject) has its own data key, stored wrapped in the log's database; the
log (`eventlog.log._sealing`) seals state payloads and free-text event fields under it
with AES-256-GCM (`eventlog.crypto._seal`). A keyring may also hold the writer key that
signs every append (`WriterKeyProvider`, `eventlog.writer_keys`). ``cryptography`` is
imported on first use.
"""

from eventlog.crypto._keyring import (
    KEYRING_ENV,
    FileKeyring,
    KeyProvider,
    WriterKeyProvider,
    add_writer_key,
    init_keyring,
    keep_writer_keys,
    load_keyring,
    rotate_writer_key,
)

__all__ = ["KEYRING_ENV", "FileKeyring", "KeyProvider", "WriterKeyProvider", "add_writer_key",
           "init_keyring", "keep_writer_keys", "load_keyring", "rotate_writer_key"]
