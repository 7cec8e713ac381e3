"""Whether the log is encrypted, and under which key-encryption keys: recorded by the log,
checked before every write (issue 40 §4).

A log opened without a keyring must not write in the clear into a log that holds sealed
data (its readers with the keyring would refuse the plaintext), and one opened with
another keyring must not wrap new subjects' keys under a KEK the log's readers do not
hold. So the log records its keyrings: a row per KEK id (`KeyringRow`), with a random value
wrapped under that KEK (its *check value*), written by the first write of a log opened with
a keyring; and a row with an empty KEK id (`PLAIN`) written by the first write that would
have sealed something, made without one. What a log is follows from what it holds
(`read_mode`):

- **encrypted**: it records keyrings, or (a log written before the record existed, or
  one an import filled) it holds subject keys: under their KEK ids;
- **plain**: it records `PLAIN` (migration 0020 records it for a log that held events but
  no key when it was upgraded, the file store when it is opened);
- **fresh**: none of these (it may hold events that sealed nothing).

Before anything is written (`EncryptionMode.before_write`):

- without a keyring, a write that seals nothing with one (a tombstone, an erasure, a
  retention decision) goes through anywhere; one that would seal (a state, a declared
  free-text field) is refused on an encrypted log (`WriteNeedsKeyring`, naming the KEK),
  and makes a fresh log plain;
- with a keyring, a fresh log records it; an encrypted log must record the keyring's id
  and its check value must unwrap (a log without a record: one of its data keys wrapped
  under that id must), else `WrongKeyring`; a plain log refuses every write that would
  seal (`LogNotEncrypted`).

A log's kind, once not fresh, never changes, so each open log reads it once (a fresh one
until its first write that decides it). Two processes making a fresh log's first writes
at the same moment, one with a keyring and one without, can both go through: the record
then names both, and reads as encrypted.

The DBA can change the record, as any row: deleting it changes nothing while the log
holds subject keys (they say the same); deleting both makes the log look plain (or fresh),
so a keyed writer refuses (or records itself) and a keyless one writes in the clear, as
into any plain log: the record guards against a missing or wrong keyring by accident,
not against the DBA, who can read that writer's plaintext anyway. Naming another KEK makes
the right keyring refuse (a denial of service the DBA has anyway). No rewrite of the
record makes a writer with a keyring seal under a KEK the DBA holds, or in the clear.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import msgspec

from eventlog.crypto._keyring import KeyProvider
from eventlog.errors import LogNotEncrypted, WriteNeedsKeyring, WrongKeyring
from eventlog.log._sealing import context_of
from eventlog.storage.contracts.keys import PLAIN, KeyringRow, KeyRow

_KEY_PAGE = 1000


@dataclass(frozen=True)
class Mode:
    """What a log is (see the module): its kind, the KEK ids it is encrypted under, their
    check values (none for a log without a record), and whether a plain log's kind is
    recorded."""

    kind: Literal["fresh", "plain", "encrypted"]
    kek_ids: tuple[str, ...] = ()
    checks: dict[str, bytes] = field(default_factory=dict)
    recorded: bool = False


def check_context(kek_id: str) -> bytes:
    """What a keyring's check value is wrapped against (no data key's context)."""
    return hashlib.sha256(msgspec.json.encode(["eventlog-keyring-check", kek_id])).digest()


def keyring_row(provider: KeyProvider, now: datetime) -> KeyringRow:
    """The record of ``provider``'s KEK: a random value wrapped under it."""
    return KeyringRow(provider.key_id, provider.wrap(secrets.token_bytes(32),
                                                     check_context(provider.key_id)), now)


async def read_mode(storage: Any) -> Mode:
    """What the log is, from its record, else its subject keys."""
    recorded = await storage.keyrings()
    keyed = [row for row in recorded if row.kek_id != PLAIN]
    if keyed:
        return Mode("encrypted", tuple(row.kek_id for row in keyed),
                    {row.kek_id: row.check_value for row in keyed})
    keys = await storage.subject_keys_page(None, _KEY_PAGE)
    if keys:
        return Mode("encrypted", tuple(dict.fromkeys(row.kek_id for row in keys)))
    return Mode("plain", recorded=True) if recorded else Mode("fresh")


class EncryptionMode:
    """The check a log makes before each write (see the module), one per open log."""

    def __init__(self, storage: Any, provider: KeyProvider | None) -> None:
        self.storage = storage
        self.provider = provider
        self._settled = False
        """Whether every later write of this log may go through unchecked."""
        self._known: Mode | None = None

    async def before_write(self, *, seals: bool, now: datetime) -> None:
        """Raise (`WriteNeedsKeyring`, `WrongKeyring`, `LogNotEncrypted`) when this write
        must not happen; ``seals``: whether it stores anything a keyring seals. Records
        what a fresh log is by the first write that decides it."""
        if self._settled or (self.provider is None and not seals):
            return
        mode = await self._mode()
        if self.provider is None:
            if mode.kind == "encrypted":
                raise WriteNeedsKeyring(mode.kek_ids)
            if not mode.recorded:
                await self.storage.add_keyring(KeyringRow(PLAIN, b"", now))
            self._settled = True
        elif mode.kind == "plain":
            if seals:
                raise LogNotEncrypted()
        else:
            if mode.kind == "encrypted":
                await self._check_keyring(mode)
            if not mode.checks:
                await self.storage.add_keyring(keyring_row(self.provider, now))
            self._settled = True

    async def _mode(self) -> Mode:
        if self._known is None or self._known.kind == "fresh":
            self._known = await read_mode(self.storage)
        return self._known

    async def _check_keyring(self, mode: Mode) -> None:
        """The keyring is one the log is encrypted under: its check value unwraps (or,
        with no record, a data key wrapped under its id does)."""
        assert self.provider is not None
        given = self.provider.key_id
        if mode.checks:
            if given not in mode.checks:
                raise WrongKeyring(mode.kek_ids, given)
            if not _unwraps(self.provider, mode.checks[given], check_context(given)):
                raise WrongKeyring(mode.kek_ids, given, ", whose key is another under that id")
            return
        held, row = await self._keys_under(given)
        if not held:
            raise WrongKeyring(mode.kek_ids, given)
        if row is not None and row.wrapped is not None and not _unwraps(
                self.provider, row.wrapped, context_of(row.tenant_id, row.subject,
                                                       row.generation)):
            raise WrongKeyring(mode.kek_ids, given, ", whose key is another under that id")

    async def _keys_under(self, kek_id: str) -> tuple[bool, KeyRow | None]:
        """Whether a log without a record holds a data key under ``kek_id``, and one still
        wrapped (None when every one of them was erased: nothing to check it against)."""
        after: tuple[str, str, int] | None = None
        held = False
        while True:
            rows = await self.storage.subject_keys_page(after, _KEY_PAGE)
            under = [row for row in rows if row.kek_id == kek_id]
            held = held or bool(under)
            found = next((row for row in under if row.wrapped is not None), None)
            if found is not None or len(rows) < _KEY_PAGE:
                return held, found
            after = (rows[-1].tenant_id, rows[-1].subject, rows[-1].generation)


def _unwraps(provider: KeyProvider, wrapped: bytes, context: bytes) -> bool:
    try:
        provider.unwrap(wrapped, context)
    except Exception:
        return False
    return True
