"""Verify's blob check: every referenced blob is stored, whole, and counted right.

Events carry the digests of the blobs they reference (`Event.blob_digests`) and, for a
tombstone, the references it releases (`Event.blob_releases`). Folding them stream by
stream gives the reference count each (tenant, digest) must have; the stored count must
equal it, and the stored bytes must hash to the digest. A blob that no event names (an
application attaching blobs to event types that do not declare them) has only its bytes
checked. Someone who rewrites a blob (the
state a `read` serves), deletes one, or leaves a count too low (so that a later delete
purges state another session still reads) is found here, not by the hash chains, which
cover the digests but never the blob bytes.
"""

from __future__ import annotations

from collections import Counter

from eventlog.errors import EventLogError
from eventlog.events import Event, EventRegistry, fold_blob_references
from eventlog.hashing import content_digest
from eventlog.records import StoredEvent, StreamProblem
from eventlog.storage.base import StorageBackend

Key = tuple[str, bytes]


_BLOB_PAGE = 500
"""Blobs read per query while verifying (their bytes are held only for that page)."""


class BlobLedger:
    """The references the events hold, fed every event in (tenant, stream, version) order.

    Memory follows the number of distinct blobs, not of events or streams: a stream's own
    counts live only while the scan is inside it (they are needed for an older tombstone
    that releases "everything this stream holds") and are then added to the totals.
    """

    def __init__(self, registry: EventRegistry) -> None:
        self.registry = registry
        self.totals: Counter[Key] = Counter()
        self.named_by: dict[Key, str] = {}
        self.tenants: set[str] = set()
        self._stream: tuple[str, str] | None = None
        self._live: Counter[bytes] = Counter()

    def feed(self, stored: StoredEvent) -> Event | None:
        """Count the event's references; the decoded event (None if it does not decode)."""
        key = (stored.tenant_id, stored.stream_id)
        if key != self._stream:
            self._close_stream()
            self._stream = key
            self.tenants.add(stored.tenant_id)
        if stored.damage is not None:
            return None  # verify reports the row
        try:
            event = self.registry.decode(stored.type, stored.data)
        except EventLogError:
            return None  # verify reports an event that does not decode
        for digest in event.blob_digests():
            self.named_by.setdefault((stored.tenant_id, digest), stored.stream_id)
        fold_blob_references(self._live, event)
        return event

    def _close_stream(self) -> None:
        if self._stream is not None:
            tenant = self._stream[0]
            for digest, count in self._live.items():
                if count > 0:
                    self.totals[(tenant, digest)] += count
        self._live = Counter()

    def expected(self) -> Counter[Key]:
        """The reference count every (tenant, digest) should have."""
        self._close_stream()
        self._stream = None
        return self.totals


async def blob_problems(
    storage: StorageBackend, ledger: BlobLedger, tenants: set[str]
) -> list[StreamProblem]:
    """Each blob whose stored count differs from the events', that is missing, or whose
    bytes do not hash to its digest; named by the first stream that references it."""
    expected = ledger.expected()
    problems: list[StreamProblem] = []
    for tenant in sorted(tenants):
        stored = dict(await storage.blob_refs(tenant))
        wanted = {digest: n for (owner, digest), n in expected.items() if owner == tenant}
        digests = sorted(set(stored) | set(wanted))
        for start in range(0, len(digests), _BLOB_PAGE):
            page = digests[start:start + _BLOB_PAGE]
            payloads = await storage.get_blobs(tenant, [d for d in page if d in stored])
            for digest in page:
                # A blob no event names was attached by the application itself
                # (`append(..., attach=...)` with its own event types): only its bytes
                # can be checked.
                counted = (tenant, digest) in ledger.named_by
                problem = _check_blob(ledger, tenant, digest,
                                      wanted.get(digest, 0) if counted else None,
                                      stored.get(digest), payloads.get(digest))
                if problem is not None:
                    problems.append(problem)
    return problems


def _check_blob(
    ledger: BlobLedger, tenant: str, digest: bytes, wanted: int | None, refs: int | None,
    payload: bytes | None,
) -> StreamProblem | None:
    """``wanted`` is None for a blob no event names (its count is not checked)."""
    def problem(kind: str, detail: str) -> StreamProblem:
        return StreamProblem(tenant_id=tenant, stream_id=ledger.named_by.get((tenant, digest), ""),
                             version=0, kind=kind, detail=f"blob {digest.hex()[:16]}…: {detail}")

    if refs is None:
        return problem("blob_missing", f"the events hold {wanted} references, no blob is stored")
    if payload is None:
        return problem("blob_missing", f"counted {refs} references but its bytes are gone")
    if content_digest(payload) != digest:
        return problem("blob_corrupt", "the stored bytes do not hash to the digest")
    if wanted is not None and refs != wanted:
        return problem("blob_refs", f"stored count {refs}, the events hold {wanted} references")
    return None
