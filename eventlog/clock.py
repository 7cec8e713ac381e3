"""Time is injected: lease expiry, approval deadlines and retention read a `Clock`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from eventlog.errors import InvalidInput

Clock = Callable[[], datetime]
"""A callable returning the current time as an aware UTC datetime."""


def system_clock() -> datetime:
    """The machine's clock, in UTC."""
    return datetime.now(UTC)


def read_clock(clock: Clock) -> datetime:
    """Read ``clock`` and normalise to UTC; a naive datetime is refused."""
    now = clock()
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInput("clock", f"must return an aware datetime, returned {now!r}")
    return now.astimezone(UTC)
