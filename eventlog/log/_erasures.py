"""What the log says of each subject's erasure (issue 40 §2): the key table obeys the log.

A subject's erasure is decided by its erasure stream (``erasure:<subject>``), whose
`SubjectKeyDestroyed` events are chained and, in a signed tenant, signed by the writer
key: not by the `subject_keys` table, which the database administrator can write. Each
erasure event erases every key generation up to its ``through`` (an event written before
``through`` existed erases the generations it counts, after those the previous erasure
erased). A later reopening (`EventLog.reopen_subject`) is a new generation above that; so a
key row of a generation the log erased is refused whatever it holds, as erased: a row
written back from a backup, or brought in by an import, serves nothing, and `verify` names
it (``key_restored``).

`ErasureLedger` follows each subject's erasure stream: the first call for a subject reads
it (one indexed query, usually returning nothing), later calls read only what was appended
after what it read. It is asked whenever the sealer reads a subject's key rows (on first
use and once per key-cache interval), never on each seal or open. Each erasure event is
checked as it is read (`SignedReads.check`): one that is not the application's raises
`ForgedEvent`, refused rather than obeyed. A truncated stream cannot undo what was read
(the ledger remembers).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from eventlog.events.erasure import ERASURE_STREAM_PREFIX, SubjectKeyDestroyed
from eventlog.hashing import GENESIS_HASH
from eventlog.records import EventEnvelope

if TYPE_CHECKING:
    from eventlog.log._signed import SignedReads

_PAGE = 500
ERASURE_TYPE = "subject_erased"
"""The stored type of `SubjectKeyDestroyed`."""


@dataclass(frozen=True)
class Erasure:
    """What the log says of one subject: every key generation up to ``through`` is
    erased (0: none), by the erasure event at ``version`` of its stream, at ``at``."""

    through: int = 0
    version: int = 0
    at: datetime | None = None


def fold_erasure(erasure: Erasure, stored: EventEnvelope) -> Erasure:
    """``erasure`` after the next event of the subject's erasure stream (other types, and
    an event that does not decode, change nothing: verify names the latter)."""
    if stored.type != ERASURE_TYPE:
        return erasure
    try:
        event = msgspec.json.decode(stored.data, type=SubjectKeyDestroyed)
    except msgspec.DecodeError:
        return erasure
    through = event.through or erasure.through + max(event.generations, 0)
    return Erasure(max(through, erasure.through), stored.version, stored.recorded_at)


@dataclass(frozen=True)
class _Followed:
    version: int = 0
    previous: bytes = GENESIS_HASH
    signed: bool = False
    erasure: Erasure = Erasure()


class ErasureLedger:
    """Each subject's erasure as its log says it, followed (see the module docstring)."""

    def __init__(self, checked: SignedReads) -> None:
        self._checked = checked
        self._followed: dict[tuple[str, str], _Followed] = {}

    async def erasure(self, tenant: str, subject: str) -> Erasure:
        """The subject's erasure as its stream says now (`ForgedEvent` for an erasure
        event that is not the application's)."""
        at = self._followed.get((tenant, subject), _Followed())
        stream = ERASURE_STREAM_PREFIX + subject
        while True:
            page = await self._checked.storage.read_stream(tenant, stream, at.version + 1,
                                                           _PAGE)
            for stored in page:
                await self._checked.check(stored, at.version + 1, at.previous, at.signed)
                at = _Followed(at.version + 1, stored.hash,
                               at.signed or stored.signature is not None,
                               fold_erasure(at.erasure, stored))
            if len(page) < _PAGE:
                break
        # Concurrent calls each read from what they found: the furthest read is kept.
        if at.version > self._followed.get((tenant, subject), _Followed()).version:
            self._followed[(tenant, subject)] = at
        return at.erasure
