"""The event contract: the hash-chained log itself, appended to and read back.

The log computes versions, hashes and view changes; a backend makes each append durable
atomically or not at all, and reads the events back in the two orders the log promises
(per stream by version; the whole log in gap-safe log order).
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager

from eventlog.records import StoredEvent
from eventlog.storage.contracts.lifecycle import StorageLifecycle
from eventlog.storage.requests import AppendRequest

NewestEvent = tuple[str, int, int, str | None]
"""An event as `EventStorage.events_newest_first` gives it: (stream id, version, position,
actor or None)."""


class EventStorage(StorageLifecycle):
    """Appends and reads of the log's events. Every method is a coroutine unless said
    otherwise, and every one is abstract: `eventlog.storage.defaults` has ready-made
    implementations a backend may opt into where they fit it."""

    @abc.abstractmethod
    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        """The stream's last version and that event's hash, from the log; None if empty."""

    @abc.abstractmethod
    async def stream_heads(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        """`stream_head` of many (tenant, stream) pairs; streams without events are left out."""

    @abc.abstractmethod
    async def append(self, request: AppendRequest) -> list[int]:
        """Commit the events, their view changes and blob references in ONE transaction.

        Returns the positions assigned, in event order. Positions increase within the
        append. If any version in the request already exists for the stream, raises
        `StreamVersionTaken` and writes nothing. Any other failure raises a `StorageError`
        (with the driver error as ``__cause__``) and writes nothing, except that a
        connection lost during commit raises `CommitOutcomeUnknown`: the log then looks
        for its own event ids to learn the outcome. A row the request's ``required``
        names that is not there (checked in the same transaction, as it commits) raises
        that requirement's `InvalidInput` (`eventlog.storage.requests.refusal`) and
        writes nothing. Each event is stored exactly as the request gives it, its
        ``actor`` included (None stays None), and every read returns it so.
        """

    @abc.abstractmethod
    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Commit several appends, each to a different stream, in ONE transaction.

        Returns each request's positions, in request order. The same guarantees as
        `append`, for the batch as a whole: if any version in any request already exists,
        raises `StreamVersionTaken` and writes nothing; any other failure writes nothing
        (or, for a connection lost during commit, raises `CommitOutcomeUnknown`). View
        changes apply in request order, as if the requests were appended one by one.
        A backend without batches mixes in `eventlog.storage.defaults.NoBatches`.
        """

    @abc.abstractmethod
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
        reaches the caller and nothing is written.
        """

    @abc.abstractmethod
    def hold_stream(self, tenant_id: str, stream_id: str) -> AbstractAsyncContextManager[None]:
        """Until the block ends, no other append to the stream commits: every read and
        append the calling task makes inside goes through one write transaction that
        holds the stream, committed when the block ends (rolled back if it raises).

        What a write that decides from what it reads (a thread delete, a prune) falls
        back on when appends to its stream keep moving the version it decided at.
        SQLite holds its one writer (``BEGIN IMMEDIATE``); PostgreSQL takes the stream's
        transaction lock and locks its stream-heads row, which every append to the
        stream updates. Only the calling task may use the log inside.
        """

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
    async def wait_readable(self, max_wait: float) -> bool:
        """Return once every event committed before the call is readable by `read_all`.

        True at once on single-writer backends. On PostgreSQL, True once every transaction
        running at the call has ended; False if one is still open after ``max_wait``
        seconds.
        """

    @abc.abstractmethod
    def scan_streams(self, tenant_id: str | None, prefix: str = ""
                     ) -> AsyncIterator[StoredEvent]:
        """Every event, ordered by (tenant, stream, version): the order verify reads in.
        With a ``prefix``, only the events of streams whose id starts with it (read from
        the events themselves, by their key's range: what a decision about every stream
        of one kind reads, such as retention's open interrupt batches)."""

    @abc.abstractmethod
    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        """How many events are stored, per tenant (only ``tenant_id``'s when given).

        Counted from the events themselves in one statement, never from a view, so `verify`
        can check that its scan read every event: a live log only grows, so a count taken
        before a scan is never more than the scan reads.
        """

    @abc.abstractmethod
    async def signing_starts(self, tenant_id: str | None) -> dict[str, int]:
        """Per tenant, the position of its first signed event (one whose ``signature`` is
        not None); tenants without a signed event are left out (only ``tenant_id``'s
        when given).

        Read from the events themselves in one statement, never from a view: where a
        tenant's signing began, which `verify` and the log's checked reads
        (`EventLog.signed`) hold unsigned events against.
        """

    @abc.abstractmethod
    async def events_newest_first(self, tenant_id: str, before: int | None, limit: int
                                  ) -> list[NewestEvent]:
        """Up to ``limit`` of one tenant's events, newest first in log order, each as
        (stream id, version, position, actor); with ``before`` (the position of an event of the
        tenant this returned), those after it in that walk.

        Log order is position order on single-writer backends and (writer transaction,
        position) on PostgreSQL, so a stream's events come highest version first. What a
        list of a tenant's streams by their last activity walks: the tenant's log-order
        index read backwards, no event body decoded, so a page costs what the newest events
        hold however many streams the tenant has. Not gap-safe (an event still committing
        can later appear above one returned): a listing, not a cursor to follow the log by.
        """

    @abc.abstractmethod
    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        """The event with this id in this tenant, if it was committed."""
