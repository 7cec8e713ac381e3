"""Wait for PostgreSQL's transaction horizon before reading the whole log.

On PostgreSQL `read_all`, `rebuild` and `compare_views` show an event only once every
transaction older than its writer has ended (the gap-safe xid8 horizon). Another session
writing to the same server (another test run, autovacuum is not one) can therefore hide
an event this test just committed for a few milliseconds. `settle` waits until every
transaction running now has ended, after which everything committed so far is visible.
"""

from __future__ import annotations

from eventlog import EventLog

_TIMEOUT_S = 30.0


async def settle(log: EventLog) -> None:
    """On PostgreSQL, return once every transaction running at the call has ended."""
    if not await log.wait_readable(_TIMEOUT_S):
        raise TimeoutError("a PostgreSQL transaction stayed open for 30 s")
