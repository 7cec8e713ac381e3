"""Waiting for PostgreSQL's read horizon before reading the whole log.

On PostgreSQL `EventLog.read_all` (and so `projections.rebuild` and `compare_views`)
returns an event only once every transaction older than its writer has ended: that is
what makes following gap-safe. The flip side: while any transaction anywhere on the
server is open, events committed after it began are not yet readable, although the views
already show them. A command that reads the whole log to report on it ("everything up to
now") first waits until every transaction running at its start has ended.
"""

from __future__ import annotations

from eventlog.cli.context import Context
from eventlog.cli.options import DEFAULT_TIMEOUT_S
from eventlog.errors import EventLogError
from eventlog.log import EventLog


async def settle(log: EventLog) -> bool:
    """Wait until everything committed before the call is readable through ``read_all``.

    True at once on single-writer backends; on PostgreSQL, True once every transaction
    running at the call has ended, False if one is still open after `DEFAULT_TIMEOUT_S`
    (or the server could not be asked: the reads that follow report that properly).
    """
    try:
        return await log.wait_readable(DEFAULT_TIMEOUT_S)
    except EventLogError:
        return False


async def settle_or_warn(context: Context, log: EventLog) -> None:
    """`settle`, printing a warning on standard error when the horizon did not pass."""
    if not await settle(log):
        context.err.print(
            "warning: a PostgreSQL transaction has stayed open for "
            f"{DEFAULT_TIMEOUT_S:.0f} s; events committed after it began are not readable "
            "yet, so what follows may lag behind the views", style="yellow")
