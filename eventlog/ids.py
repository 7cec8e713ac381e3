"""Time-ordered ids: UUID version 7 (RFC 9562), which Python 3.11 lacks.

Checkpoint ids and event ids are minted here. Ordered ids keep the unique indexes on them
growing at their right edge: a random (version 4) id lands on a random leaf page of an
index that outgrows memory, so every insert may read a page and, after each database
checkpoint, log the whole page again.

Layout: 48 bits of Unix time in milliseconds, the version (7), 12 + 62 bits of counter
and randomness, the variant (10). Within one process ids are strictly increasing: when the
clock has not moved on (or went back), the previous id's 74 low bits are incremented
instead of drawn afresh (RFC 9562 §6.2, method 2), so two ids minted in the same
millisecond still sort in minting order. Across processes they sort by millisecond.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid

_RANDOM_BITS = 74
_RANDOM_MASK = (1 << _RANDOM_BITS) - 1
_MAX_MILLIS = (1 << 48) - 1

_lock = threading.Lock()
_last: tuple[int, int] = (-1, 0)  # (milliseconds, 74-bit counter/random part)


def uuid7(now_ns: int | None = None) -> uuid.UUID:
    """A new UUIDv7, greater than every one this process minted before."""
    global _last
    millis = min((time.time_ns() if now_ns is None else now_ns) // 1_000_000, _MAX_MILLIS)
    with _lock:
        last_millis, last_random = _last
        if millis > last_millis:
            random_part = secrets.randbits(_RANDOM_BITS)
        else:
            millis, random_part = last_millis, last_random + 1
            if random_part > _RANDOM_MASK:  # 2^74 ids in one millisecond: borrow the next
                millis, random_part = last_millis + 1, secrets.randbits(_RANDOM_BITS)
        _last = (millis, random_part)
    return _assemble(millis, random_part)


def _assemble(millis: int, random_part: int) -> uuid.UUID:
    rand_a = random_part >> 62  # the top 12 bits
    rand_b = random_part & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return uuid.UUID(int=value)
