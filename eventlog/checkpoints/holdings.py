"""A thread's blob references, folded from its events as a removal decides
(`projections.thread_holdings`).

`fold_thread` reads the thread's stream from its first event. `HoldingsCache` (what
`ThreadCheckpoints` removes through) keeps the last fold of a few threads and extends it:
a retention pass removing a long thread batch by batch, or prunes in a row, reads each
event once, not once per removal. A cached fold is used only while the event it ended at
is still stored with the hash it was checked with (one row read): that hash commits to
every event before it (each event's hash covers the previous one's), so the events the
fold took in are the ones stored; the read goes on from there, checked link by link from
that hash. Anything else (the event rewritten, the stream shorter than the fold, a fold
asked at an older version) folds again from the first event.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from eventlog.events.threads import THREAD_STREAM_PREFIX
from eventlog.log import EventLog, StreamLink
from projections.thread_holdings import ThreadHoldings

CACHED_THREADS = 16
"""Threads whose last fold `HoldingsCache` keeps (least recently used goes first)."""


async def fold_thread(log: EventLog, tenant_id: str, thread_id: str,
                      version: int | None = None) -> ThreadHoldings:
    """What the thread's remaining checkpoints, values and writes hold, folded from its
    stream's events through ``version`` (None: all), each checked as it is read
    (`EventLog.signed`: `ForgedEvent` at one that is not the application's) and decoded
    without opening a sealed field (none of them is needed)."""
    holdings, _link = await _fold_on(log, tenant_id, thread_id, version, ThreadHoldings(), None)
    return holdings


async def _fold_on(
    log: EventLog, tenant_id: str, thread_id: str, version: int | None,
    holdings: ThreadHoldings, after: StreamLink | None,
) -> tuple[ThreadHoldings, StreamLink | None]:
    """``holdings`` extended by the stream's events after ``after`` (checked from it)
    through ``version``; with where the read got to."""
    link = after
    async for stored in log.signed.stored_stream(tenant_id, THREAD_STREAM_PREFIX + thread_id,
                                                 version, after=after):
        holdings.fold(log.decode(stored).event)
        link = StreamLink(stored.version, stored.hash,
                          stored.signature is not None or (link is not None and link.signed))
    return holdings, link


class _Folded(NamedTuple):
    link: StreamLink
    holdings: ThreadHoldings


class HoldingsCache:
    """The last fold of up to `CACHED_THREADS` threads of one log, extended on use; see
    the module docstring. A cached `ThreadHoldings` is never changed: an extension folds
    into a copy."""

    def __init__(self, log: EventLog, size: int = CACHED_THREADS) -> None:
        self._log = log
        self._size = size
        self._folds: OrderedDict[tuple[str, str], _Folded] = OrderedDict()
        self.events_read = 0
        """Events folded so far (what a test of the cache counts)."""

    async def fold(self, tenant_id: str, thread_id: str,
                   version: int | None = None) -> ThreadHoldings:
        """What `fold_thread` returns, reading only the events after the cached fold when
        it still stands."""
        key = (tenant_id, thread_id)
        cached = self._folds.pop(key, None)
        holdings, after = ThreadHoldings(), None
        if cached is not None and (version is None or cached.link.version <= version):
            stored = await self._log.signed.stored_hash(
                tenant_id, THREAD_STREAM_PREFIX + thread_id, cached.link.version)
            if stored == cached.link.hash:
                holdings, after = cached.holdings.copy(), cached.link
        start = 0 if after is None else after.version
        holdings, link = await _fold_on(self._log, tenant_id, thread_id, version, holdings,
                                        after)
        if link is not None:
            self.events_read += link.version - start
            self._folds[key] = _Folded(link, holdings)
            while len(self._folds) > self._size:
                self._folds.popitem(last=False)
        return holdings
