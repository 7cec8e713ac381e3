"""Small helpers the contract suite (and this repo's tests) share."""

from __future__ import annotations

import uuid

from eventlog import EventLog

_SETTLE_TIMEOUT_S = 30.0


def fresh_id(prefix: str = "id") -> str:
    """A new unique id, so examples never collide in a shared store."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def settle(log: EventLog) -> None:
    """Return once every transaction running at the call has ended (on stores with a
    read horizon, such as PostgreSQL's gap-safe xid8 one).

    On PostgreSQL `read_all`, `rebuild` and `compare_views` show an event only once every
    transaction older than its writer has ended. Another session writing to the same
    server (another test run; autovacuum is not one) can therefore hide an event a test
    just committed for a few milliseconds. After `settle`, everything committed so far is
    visible. On stores without a horizon it returns at once.
    """
    if not await log.wait_readable(_SETTLE_TIMEOUT_S):
        raise TimeoutError(f"a transaction stayed open for {_SETTLE_TIMEOUT_S:.0f} s")
