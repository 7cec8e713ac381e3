"""What a stream's events hold: the only blob references an append to it may release.

A stream holds the references its own events name (`Event.blob_digests`) and have not
given up (`Event.blob_releases`): the fold `verify` counts by. An append may release only
what its own events say they give up (a tombstone naming its releases) of what the stream
holds; anything more would purge state that another stream (another session, another
thread) still reads, so it is refused (`ReleaseNotHeld`) and nothing is written. The
check folds the stream, so only appends that release (tombstones, rare) pay for a read;
an ordinary append reads nothing more than before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from eventlog.errors import EventLogError, ReleaseNotHeld
from eventlog.events import Event, EventRegistry, fold_blob_references, release_beyond
from eventlog.records import StoredEvent
from eventlog.storage.base import StorageBackend

_PAGE = 500
"""Events read per query while folding a stream."""


class Holdings:
    """The references one stream's events hold, folded up to a version; extended (not
    read again) when a retry of the same append finds the stream grown."""

    def __init__(
        self, storage: StorageBackend, registry: EventRegistry, tenant_id: str, stream_id: str
    ) -> None:
        self.storage, self.registry = storage, registry
        self.tenant_id, self.stream_id = tenant_id, stream_id
        self.version = 0
        self.held: Counter[bytes] = Counter()

    async def at(self, version: int) -> Counter[bytes]:
        """What the stream's events up to ``version`` hold."""
        if version < self.version:
            self.version, self.held = 0, Counter()
        while self.version < version:
            page = await self.storage.read_stream(
                self.tenant_id, self.stream_id, self.version + 1,
                min(_PAGE, version - self.version),
            )
            if not page:
                break
            for stored in page:
                event = self._decoded(stored)
                if event is not None:
                    fold_blob_references(self.held, event)
                self.version = stored.version
        return self.held

    def _decoded(self, stored: StoredEvent) -> Event | None:
        """The event, or None for a row that does not decode (it names no blob we know)."""
        if stored.damage is not None:
            return None
        try:
            return self.registry.decode(stored.type, stored.data)
        except EventLogError:
            return None


def releasable(
    stream_id: str, held: Mapping[bytes, int], events: Sequence[Event], *, strict: bool
) -> Counter[bytes]:
    """What ``events``, appended to a stream holding ``held``, give up of what it holds.

    ``strict`` (an import: the events are the whole truth) refuses an event that gives up
    a reference its stream does not hold; otherwise such a release counts for nothing.
    """
    live = Counter(held)
    given: Counter[bytes] = Counter()
    for event in events:
        live.update(event.blob_digests())
        gives = event.blob_releases()
        if gives is None:  # an older tombstone: everything the stream holds
            gives = {digest: count for digest, count in live.items() if count > 0}
        if strict:
            refuse_beyond(stream_id, live, gives)
        for digest, count in gives.items():
            taken = min(count, max(live[digest], 0))
            given[digest] += taken
            live[digest] -= taken
    return given


def releases_any(events: Sequence[Event]) -> bool:
    """Whether any of the events gives up blob references (a tombstone)."""
    return any(event.blob_releases() != {} for event in events)


def refuse_beyond(
    stream_id: str, held: Mapping[bytes, int], releases: Mapping[bytes, int]
) -> None:
    """`ReleaseNotHeld` for the first of ``releases`` beyond what ``held`` has."""
    digest = release_beyond(held, releases)
    if digest is not None:
        raise ReleaseNotHeld(stream_id, digest, releases[digest], max(held.get(digest, 0), 0))
