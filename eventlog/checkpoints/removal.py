"""How a removal (a session delete, a thread delete or prune, a copy) waits after losing a
version race: a bound on time, not on tries, and a jittered backoff between tries. The
loop itself is `eventlog.log.fencing.decide_fenced`."""

from __future__ import annotations

import random
from dataclasses import dataclass

from eventlog.events import Event
from eventlog.log.fencing import Retries

REMOVAL_TIMEOUT_S = 60.0
"""How long a delete, prune or copy keeps deciding again after lost races before it
raises `VersionConflict` (a bound on time, not on tries: under load a try is slow)."""
_BACKOFF_BASE = 0.002
_BACKOFF_MAX = 0.1


def backoff_delay(attempt: int) -> float:
    """Seconds to wait before try ``attempt`` + 1: full jitter, doubling from 2 ms to a
    ceiling of 100 ms, so racing removers and writers spread out."""
    return random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2 ** min(attempt, 16)))


REMOVAL_RETRIES = Retries(seconds=REMOVAL_TIMEOUT_S, backoff=backoff_delay)
"""The removals' and copies' `Retries`: `REMOVAL_TIMEOUT_S`, `backoff_delay` between tries."""


@dataclass(frozen=True)
class StreamRemoval:
    """A removal decided but not appended: the tombstone ``event`` for ``stream_id``,
    to append fenced on ``expected_version`` with ``releases`` (what a retention pass
    batches with others in one `EventLog.append_batch`)."""

    stream_id: str
    expected_version: int
    event: Event
    releases: dict[bytes, int]
    checkpoints: list[str]
    """What goes: checkpoint ids (a thread's as ``namespace/id`` outside the root one)."""
    emptied: bool
    """Nothing of the session or thread remains after it."""
