"""Rotation of the key-encryption key: every data key re-wrapped under a new keyring.

One pass over the subject keys of every tenant, in key order, a page at a time: each key
still wrapped under the old KEK is unwrapped with it and wrapped under the new one, and
the page is written back in one statement that changes only rows still under the old KEK.
A pass killed midway leaves every row wrapped under one KEK or the other, never neither,
and the next pass skips what is done: rotation is resumable, and idempotent. Destroyed
keys stay destroyed. The data itself is never re-encrypted: only its keys' wrapping.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from eventlog.crypto._keyring import KeyProvider
from eventlog.errors import InvalidInput
from eventlog.log._mode import keyring_row
from eventlog.log._sealing import context_of
from eventlog.storage.contracts.keys import KeyRow, KeyStorage

ROTATION_PAGE = 200


@dataclass
class Rotation:
    """What a rotation pass did: keys re-wrapped now, found already under the new KEK,
    destroyed (erased), and wrapped under neither KEK (left as they are)."""

    rewrapped: int = 0
    already: int = 0
    erased: int = 0
    foreign: int = 0


async def rotate_keys(storage: KeyStorage, old: KeyProvider, new: KeyProvider, *,
                      now: datetime, page: int = ROTATION_PAGE) -> Rotation:
    """Re-wrap every data key under ``old``'s KEK with ``new``'s (see the module).

    The log's record of its keyrings (`eventlog.log._mode`) names ``new`` before the
    first key is re-wrapped, and no longer names ``old`` once the pass is done: a pass
    killed midway leaves both named (each opens the keys wrapped under it)."""
    if old.key_id == new.key_id:
        raise InvalidInput("to", f"the new keyring has the same key id {new.key_id!r} as the "
                                 "old one: rotation needs a new keyring (eventlog keys init)")
    await storage.add_keyring(keyring_row(new, now))
    done = Rotation()
    after: tuple[str, str, int] | None = None
    while True:
        rows = await storage.subject_keys_page(after, page)
        if not rows:
            await storage.drop_keyring(old.key_id)
            return done
        changed = [_rewrapped(row, old, new) for row in rows if _tally(row, old, new, done)]
        if changed:
            done.rewrapped += await storage.rewrap_subject_keys(changed, old.key_id)
        last = rows[-1]
        after = (last.tenant_id, last.subject, last.generation)


def _tally(row: KeyRow, old: KeyProvider, new: KeyProvider, done: Rotation) -> bool:
    """Whether ``row`` is to be re-wrapped; counts it otherwise."""
    if row.wrapped is None:
        done.erased += 1
    elif row.kek_id == new.key_id:
        done.already += 1
    elif row.kek_id != old.key_id:
        done.foreign += 1
    else:
        return True
    return False


def _rewrapped(row: KeyRow, old: KeyProvider, new: KeyProvider) -> KeyRow:
    assert row.wrapped is not None
    context = context_of(row.tenant_id, row.subject, row.generation)
    return replace(row, wrapped=new.wrap(old.unwrap(row.wrapped, context), context),
                   kek_id=new.key_id)
