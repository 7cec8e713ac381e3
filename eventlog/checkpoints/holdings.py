"""A thread's blob references, folded from its events as a removal decides
(`projections.thread_holdings`)."""

from __future__ import annotations

from eventlog.events.threads import THREAD_STREAM_PREFIX
from eventlog.log import EventLog
from projections.thread_holdings import ThreadHoldings


async def fold_thread(log: EventLog, tenant_id: str, thread_id: str,
                      version: int | None = None) -> ThreadHoldings:
    """What the thread's remaining checkpoints, values and writes hold, folded from its
    stream's events through ``version`` (None: all), each checked as it is read
    (`EventLog.signed`: `ForgedEvent` at one that is not the application's) and decoded
    without opening a sealed field (none of them is needed)."""
    holdings = ThreadHoldings()
    stream = THREAD_STREAM_PREFIX + thread_id
    async for stored in log.signed.stored_stream(tenant_id, stream, version):
        holdings.fold(log.decode(stored).event)
    return holdings
