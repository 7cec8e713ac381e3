"""The storage backend contract, written once. Every backend implements `StorageBackend`.

A backend stores the log (events and blobs) and the views, and nothing else. It never
decides: the log computes versions, hashes and view changes, and the backend makes them
durable atomically or not at all.
"""

from __future__ import annotations

import abc
import heapq
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from eventlog.errors import StorageError
from eventlog.records import StoredEvent
from projections.changes import Change
from projections.memory import ViewTables
from projections.query import ViewQuery


class PendingEvent(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An event the log has fully prepared (version, time, hashes), awaiting its position."""

    event_id: uuid.UUID
    version: int
    recorded_at: Any  # datetime; typed loosely so the struct stays cheap to build
    type: str
    data: bytes
    prev_hash: bytes
    hash: bytes


class AppendRequest(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one append commits together.

    ``changes`` pairs each view change with the index (into ``events``) of the event that
    produced it, so `AT_POSITION` can be resolved. ``blob_adds`` maps a digest to its bytes
    and how many new references this append makes to it; ``blob_releases`` maps a digest to
    how many references this append drops (a blob whose count reaches zero is deleted).
    """

    tenant_id: str
    stream_id: str
    events: list[PendingEvent]
    changes: list[tuple[int, Change]]
    blob_adds: dict[bytes, tuple[bytes, int]] = {}
    blob_releases: dict[bytes, int] = {}


class StreamVersionTaken(Exception):
    """Raised by `StorageBackend.append` when a version it was asked to write exists, or
    when the server rolled the append back to break a deadlock (``reason`` says which).

    Internal: the log catches it, re-reads the stream head and either retries or raises
    `VersionConflict`. Nothing of the append was written.
    """

    def __init__(self, reason: str = "version_taken") -> None:
        self.reason = reason
        super().__init__(reason)


class StorageBackend(abc.ABC):
    """The contract every backend fulfils. Methods are coroutines unless said otherwise."""

    rebuilds_views_on_open: bool = False
    """True for backends that keep views in memory and rebuild them from the log on open."""

    name: str
    """A short name for messages and logs: ``memory``, ``sqlite``, ``postgresql``, ``file``."""

    @abc.abstractmethod
    async def open(self, *, upgrade: bool) -> str:
        """Connect and bring the schema up to date (unless ``upgrade`` is false).

        Returns the schema revision in use. Upgrades are serialized across processes. A
        database stamped with a revision this code does not know raises
        `UnknownSchemaRevision` naming both revisions; with ``upgrade=False`` a database
        that is behind raises `SchemaError`.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and locks. Never disposes an engine the caller passed in."""

    @abc.abstractmethod
    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        """The stream's last version and that event's hash, from the log; None if empty."""

    @abc.abstractmethod
    async def append(self, request: AppendRequest) -> list[int]:
        """Commit the events, their view changes and blob references in ONE transaction.

        Returns the positions assigned, in event order. Positions increase within the
        append. If any version in the request already exists for the stream, raises
        `StreamVersionTaken` and writes nothing. Any other failure raises a `StorageError`
        (with the driver error as ``__cause__``) and writes nothing, except that a
        connection lost during commit raises `CommitOutcomeUnknown`: the log then looks
        for its own event ids to learn the outcome.
        """

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Commit several appends, each to a different stream, in ONE transaction.

        Returns each request's positions, in request order. The same guarantees as
        `append`, for the batch as a whole: if any version in any request already exists,
        raises `StreamVersionTaken` and writes nothing; any other failure writes nothing
        (or, for a connection lost during commit, raises `CommitOutcomeUnknown`). View
        changes apply in request order, as if the requests were appended one by one.
        The default handles a batch of one and refuses more (`StorageError`); every
        built-in backend overrides it.
        """
        if len(requests) != 1:
            raise StorageError(self.name, "append", "this backend has no batched append "
                               "(StorageBackend.append_batch)")
        return [await self.append(requests[0])]

    async def append_at_head(
        self, tenant_id: str, stream_id: str,
        build: Callable[[tuple[int, bytes] | None], AppendRequest],
    ) -> tuple[AppendRequest, list[int]]:
        """Read the stream's head, then commit the request ``build`` makes for it (its
        events chained onto that head); the request and its positions.

        What the log falls back on when appends at the end of one stream keep losing
        version races: a backend reads the head inside the write transaction, where no
        other append of the stream can commit before this one (SQLite's one writer), or
        under a lock every such fallback of the stream takes (PostgreSQL), so one of them
        cannot lose to another. The same errors as `append`; an error ``build`` raises
        reaches the caller and nothing is written. The default reads the head and
        appends, for backends with one process and no awaits between the two.
        """
        request = build(await self.stream_head(tenant_id, stream_id))
        return request, await self.append(request)

    @asynccontextmanager
    async def hold_stream(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        """Until the block ends, no other append to the stream commits: every read and
        append the calling task makes inside goes through one write transaction that
        holds the stream, committed when the block ends (rolled back if it raises).

        What a write that decides from what it reads (a thread delete, a prune) falls
        back on when appends to its stream keep moving the version it decided at.
        SQLite holds its one writer (``BEGIN IMMEDIATE``); PostgreSQL takes the stream's
        transaction lock and locks its stream-heads row, which every append to the
        stream updates. The default holds nothing (backends of one process, where the
        caller's own lock suffices). Only the calling task may use the log inside.
        """
        yield

    async def stream_heads(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        """`stream_head` of many (tenant, stream) pairs; streams without events are left out.

        The default asks one stream at a time; a backend may answer in one read.
        """
        heads = {}
        for tenant_id, stream_id in keys:
            head = await self.stream_head(tenant_id, stream_id)
            if head is not None:
                heads[(tenant_id, stream_id)] = head
        return heads

    @abc.abstractmethod
    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int, limit: int
    ) -> list[StoredEvent]:
        """Up to ``limit`` events of one stream with version ≥ ``from_version``, in order."""

    @abc.abstractmethod
    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        """A page of the log in log order after the opaque ``after`` cursor, and the cursor
        after that page (``after`` itself when the page is empty).

        Gap-safe: once an event was returned, no event that commits later is ever placed
        before it, so a reader resuming from a cursor never skips an event. Backends with
        one writer at a time get this from position order; PostgreSQL from its
        transaction-id horizon.
        """

    @abc.abstractmethod
    def scan_streams(self, tenant_id: str | None) -> AsyncIterator[StoredEvent]:
        """Every event, ordered by (tenant, stream, version): the order verify reads in."""

    @abc.abstractmethod
    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        """How many events are stored, per tenant (only ``tenant_id``'s when given).

        Counted from the events themselves in one statement, never from a view, so `verify`
        can check that its scan read every event: a live log only grows, so a count taken
        before a scan is never more than the scan reads.
        """

    @abc.abstractmethod
    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        """The event with this id in this tenant, if it was committed."""

    @abc.abstractmethod
    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        """A blob's bytes by (tenant, digest), or None when absent or purged."""

    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        """The bytes of those of ``digests`` that exist in the tenant, by digest.

        SQL backends answer in one query; the default asks `get_blob` for each.
        """
        found: dict[bytes, bytes] = {}
        for digest in dict.fromkeys(digests):
            data = await self.get_blob(tenant_id, digest)
            if data is not None:
                found[digest] = data
        return found

    @abc.abstractmethod
    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        """Rows of one view table answering ``query``, as plain dicts."""

    @abc.abstractmethod
    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        """Every view table's rows, sorted by primary key (for comparison with a rebuild)."""

    async def wait_readable(self, max_wait: float) -> bool:
        """Return once every event committed before the call is readable by `read_all`.

        True at once on single-writer backends. On PostgreSQL, True once every transaction
        running at the call has ended; False if one is still open after ``max_wait``
        seconds.
        """
        return True

    async def replication_mark(self) -> str | None:
        """Where this database's write-ahead log ends now (a PostgreSQL LSN), for a
        replica to catch up to; None on backends without replicas."""
        return None

    async def wait_replayed(self, mark: str, max_wait: float) -> bool:
        """On a replica, return True once it has replayed everything up to ``mark`` (from
        the primary's `replication_mark`); False if that takes over ``max_wait`` seconds."""
        return True

    def stored_events(self) -> Iterable[StoredEvent]:
        """Every event in log order (only for backends that rebuild views on open)."""
        raise NotImplementedError

    def install_views(self, tables: ViewTables) -> None:
        """Replace the in-memory views (only for backends that rebuild views on open)."""
        raise NotImplementedError

    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        """Reference counts of a tenant's blobs (diagnostics and tests)."""
        raise NotImplementedError

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        """The stored length in bytes of those of ``digests`` that exist in the tenant:
        verify reads blobs in pages bounded by their bytes. The default reads each blob
        (one at a time); the built-in backends answer without reading the bytes."""
        sizes: dict[bytes, int] = {}
        for digest in dict.fromkeys(digests):
            data = await self.get_blob(tenant_id, digest)
            if data is not None:
                sizes[digest] = len(data)
        return sizes

    async def blob_refs_page(
        self, tenant_id: str, after: bytes, limit: int
    ) -> list[tuple[bytes, int]]:
        """Up to ``limit`` (digest, reference count) pairs of the tenant's blobs whose
        digest sorts after ``after`` (bytewise), in digest order: verify pages through
        every blob with it. The default picks the page from `blob_refs` (fine for stores
        held in memory); SQL backends read one page."""
        refs = await self.blob_refs(tenant_id)
        return heapq.nsmallest(limit, ((d, n) for d, n in refs.items() if d > after))
