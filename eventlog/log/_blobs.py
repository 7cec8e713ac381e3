"""Verify's blob check: every referenced blob is stored, whole, and counted right.

Events carry the digests of the blobs they reference (`Event.blob_digests`) and, for a
tombstone, the references it releases (`Event.blob_releases`). Folding them stream by
stream gives the reference count each (tenant, digest) must have; the stored count must
equal it, and the stored bytes must hash to the digest. A blob of at most
`eventlog.hashing.TOLD_BY_DIGEST` bytes has no count to check (it is never
counted nor purged), only its bytes. A blob that no event names (an
application attaching blobs to event types that do not declare them) has only its bytes
checked. Someone who rewrites a blob (the state a `read` serves), deletes one, or leaves
a count too low (so that a later delete purges state another session still reads) is
found here, not by the hash chains, which cover the digests but never the blob bytes.

A blob that an import recorded as withheld (`StateWithheld`: its file was exported without
state) and that is not stored is counted as withheld, not reported: it is absent by
intent. Any other missing blob is a finding.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from eventlog.errors import CorruptEvent, EventLogError
from eventlog.events import Event, EventRegistry, fold_blob_references
from eventlog.events.transfer import StateWithheld
from eventlog.hashing import content_digest, uncounted
from eventlog.records import StoredEvent, StreamProblem
from eventlog.storage.base import StorageBackend

_BLOB_PAGE = 500
"""Blobs' digests and counts read per query while verifying."""
_BLOB_PAGE_BYTES = 32 * 1024 * 1024
"""The most blob bytes read per query while verifying (held only for that query); a
larger blob is read alone."""
_FLUSH = 2_000
"""Tally rows buffered in memory before they go to the tally's file."""


class BlobLedger:
    """The references the events hold, fed every event in (tenant, stream, version) order.

    Memory stays flat however many blobs the log holds: a stream's own counts live only
    while the scan is inside it (they are needed for an older tombstone that releases
    "everything this stream holds"); then they, and which stream first named each blob,
    go to a tally in a private temporary SQLite file, which `counts` reads back summed,
    in digest order, to be merged with the stored counts page by page.
    """

    def __init__(self, registry: EventRegistry) -> None:
        self.registry = registry
        self.tenants: set[str] = set()
        self._stream: tuple[str, str] | None = None
        self._live: Counter[bytes] = Counter()
        # An empty file name: a private on-disk database, deleted when closed.
        self._tally = sqlite3.connect("")
        self._tally.execute("PRAGMA journal_mode = OFF")
        self._tally.execute("PRAGMA synchronous = OFF")
        self._tally.execute("CREATE TABLE tally (tenant TEXT NOT NULL, digest BLOB NOT NULL, "
                            "refs INTEGER NOT NULL, seen INTEGER NOT NULL, stream TEXT NOT NULL)")
        self._tally.execute("CREATE TABLE withheld (tenant TEXT NOT NULL, digest BLOB NOT NULL, "
                            "PRIMARY KEY (tenant, digest)) WITHOUT ROWID")
        self._rows: list[tuple[str, bytes, int, int, str]] = []
        self._named: dict[bytes, int] = {}
        self._seen = 0

    def feed(self, stored: StoredEvent) -> Event | CorruptEvent | None:
        """Count the event's references; the decoded event, the `CorruptEvent` its bytes
        raise when they do not decode as its (known) type, or None for a damaged row or a
        tag this registry does not know (an application's type read by the command)."""
        key = (stored.tenant_id, stored.stream_id)
        if key != self._stream:
            self._close_stream()
            self._stream = key
            self.tenants.add(stored.tenant_id)
        if stored.damage is not None:
            return None  # verify reports the row
        try:
            event = self.registry.strict.decode(stored.type, stored.data)
        except CorruptEvent as error:
            return error  # verify reports it
        except EventLogError:
            return None
        if isinstance(event, StateWithheld):
            self._withhold(stored.tenant_id, event)
        for digest in event.blob_digests():
            if digest not in self._named:
                self._seen += 1
                self._named[digest] = self._seen
        fold_blob_references(self._live, event)
        return event

    def counts(self) -> Iterator[tuple[str, bytes, int, str, bool]]:
        """(tenant, digest, references the events hold, first stream naming it, whether an
        import recorded it as withheld) of every blob an event names, in (tenant, digest)
        order (sorted by SQLite, on disk)."""
        self._close_stream()
        self._stream = None
        self._flush()
        # With exactly one min(), SQLite takes the bare column (stream) from its row.
        for tenant, digest, refs, stream, _, withheld in self._tally.execute(
                "SELECT tenant, digest, sum(refs), stream, min(seen), EXISTS (SELECT 1 FROM "
                "withheld w WHERE w.tenant = tally.tenant AND w.digest = tally.digest) "
                "FROM tally GROUP BY tenant, digest ORDER BY tenant, digest"):
            yield tenant, digest, refs, stream, bool(withheld)

    def streams_naming(self, tenant: str, digest: bytes) -> tuple[str, ...]:
        """Every stream whose events name the blob, in the order they first named it
        (after `counts`)."""
        self._tally.execute("CREATE INDEX IF NOT EXISTS tally_blob ON tally (tenant, digest)")
        rows = self._tally.execute(
            "SELECT stream FROM tally WHERE tenant = ? AND digest = ? GROUP BY stream "
            "ORDER BY min(seen)", (tenant, digest))
        return tuple(stream for (stream,) in rows)

    def _withhold(self, tenant: str, event: StateWithheld) -> None:
        digests = []
        for digest in event.digests:
            try:
                digests.append((tenant, bytes.fromhex(digest)))
            except ValueError:
                continue  # names no blob: withholds nothing
        self._tally.executemany("INSERT OR IGNORE INTO withheld VALUES (?, ?)", digests)

    def close(self) -> None:
        """Delete the tally's file."""
        self._tally.close()

    def _close_stream(self) -> None:
        # One row per blob the stream named: the references it still holds (a count that
        # a release took below zero holds none) and when it was first named.
        if self._stream is not None:
            tenant, stream = self._stream
            live = self._live
            self._rows += [(tenant, digest, max(live[digest], 0), seen, stream)
                           for digest, seen in self._named.items()]
            if len(self._rows) >= _FLUSH:
                self._flush()
        self._live = Counter()
        self._named = {}

    def _flush(self) -> None:
        if self._rows:
            self._tally.executemany("INSERT INTO tally VALUES (?, ?, ?, ?, ?)", self._rows)
            self._rows = []


@dataclass
class BlobCheck:
    """What `check_blobs` found: problems, blobs checked, blobs withheld by an import."""

    problems: list[StreamProblem] = field(default_factory=list)
    checked: int = 0
    withheld: int = 0


_Row = tuple[bytes, int | None, str, int | None, bool]
"""(digest, references the events hold or None if no event names it, first stream naming
it, stored count or None, recorded as withheld)."""


async def check_blobs(storage: StorageBackend, ledger: BlobLedger, tenants: set[str]
                      ) -> BlobCheck:
    """Each blob whose stored count differs from the events', that is missing (and not
    withheld), or whose bytes do not hash to its digest; named by the first stream that
    references it."""
    check = BlobCheck()
    counted = _TenantRows(ledger.counts())
    for tenant in sorted(tenants):
        page: list[_Row] = []
        async for found in _merged(counted.take(tenant), _stored_refs(storage, tenant)):
            page.append(found)
            if len(page) == _BLOB_PAGE:
                await _check_page(storage, tenant, page, check)
                page = []
        await _check_page(storage, tenant, page, check)
    return check


class _TenantRows:
    """The tally's rows, handed out one tenant at a time, tenants taken in sorted order."""

    def __init__(self, rows: Iterator[tuple[str, bytes, int, str, bool]]) -> None:
        self._rows = rows
        self._next = next(rows, None)

    def take(self, tenant: str) -> Iterator[tuple[bytes, int, str, bool]]:
        """The rows of ``tenant`` (rows of tenants sorting before it are skipped)."""
        while self._next is not None and self._next[0] < tenant:
            self._next = next(self._rows, None)
        while self._next is not None and self._next[0] == tenant:
            _, digest, refs, stream, withheld = self._next
            self._next = next(self._rows, None)
            yield digest, refs, stream, withheld


async def _stored_refs(storage: StorageBackend, tenant: str) -> AsyncIterator[tuple[bytes, int]]:
    after = b""
    while True:
        page = await storage.blob_refs_page(tenant, after, _BLOB_PAGE)
        for row in page:
            yield row
        if len(page) < _BLOB_PAGE:
            return
        after = page[-1][0]


async def _merged(
    counted: Iterator[tuple[bytes, int, str, bool]], stored: AsyncIterator[tuple[bytes, int]]
) -> AsyncIterator[_Row]:
    """`_Row`s over both sides, in digest order."""
    wanted = next(counted, None)
    have = await anext(stored, None)
    while wanted is not None or have is not None:
        if have is None or (wanted is not None and wanted[0] < have[0]):
            assert wanted is not None
            yield wanted[0], wanted[1], wanted[2], None, wanted[3]
            wanted = next(counted, None)
        elif wanted is None or have[0] < wanted[0]:
            yield have[0], None, "", have[1], False
            have = await anext(stored, None)
        else:
            yield wanted[0], wanted[1], wanted[2], have[1], wanted[3]
            wanted, have = next(counted, None), await anext(stored, None)


async def _check_page(
    storage: StorageBackend, tenant: str, page: list[_Row], check: BlobCheck
) -> None:
    """Check a page's rows, reading their bytes in runs of at most `_BLOB_PAGE_BYTES`."""
    sizes = await storage.blob_sizes(tenant, [row[0] for row in page if row[3] is not None])
    start = held = 0
    for end, row in enumerate(page):
        size = sizes.get(row[0], 0)
        if end > start and held + size > _BLOB_PAGE_BYTES:
            await _check_run(storage, tenant, page[start:end], check)
            start, held = end, 0
        held += size
    await _check_run(storage, tenant, page[start:], check)


async def _check_run(
    storage: StorageBackend, tenant: str, rows: list[_Row], check: BlobCheck
) -> None:
    payloads = await storage.get_blobs(tenant, [row[0] for row in rows if row[3] is not None])
    for digest, wanted, stream, refs, withheld in rows:
        if refs is None and not wanted:
            continue  # named once, every reference since released: rightly purged
        check.checked += 1
        if refs is None and withheld:
            check.withheld += 1
            continue
        problem = _check_blob(tenant, digest, stream, wanted, refs, payloads.get(digest),
                              withheld)
        if problem is not None:
            check.problems.append(problem)


def _check_blob(
    tenant: str, digest: bytes, stream: str, wanted: int | None, refs: int | None,
    payload: bytes | None, withheld: bool,
) -> StreamProblem | None:
    """``wanted`` is None for a blob no event names (its count is not checked: the
    application attached it with its own event types, `append(..., attach=...)`). A
    blob once withheld may hold fewer references than the events: the events imported
    without it took none."""
    def problem(kind: str, detail: str) -> StreamProblem:
        return StreamProblem(tenant_id=tenant, stream_id=stream, version=0, kind=kind,
                             detail=f"blob {digest.hex()[:16]}…: {detail}", blob=digest.hex())

    if refs is None:
        return problem("blob_missing", f"the events hold {_references(wanted)}, no blob is stored")
    if payload is None:
        return problem("blob_missing", f"counted {_references(refs)} but its bytes are gone")
    if content_digest(payload) != digest:
        return problem("blob_corrupt", "the stored bytes do not hash to the digest")
    if uncounted(payload):
        return None  # told by its digest: never counted nor purged (TOLD_BY_DIGEST)
    if wanted is not None and refs != wanted and not (withheld and refs < wanted):
        return problem("blob_refs", f"stored count {refs}, the events hold {_references(wanted)}")
    return None


def _references(count: int | None) -> str:
    return "1 reference" if count == 1 else f"{count} references"
