"""The event log: append with optimistic concurrency, read, verify.

The log decides everything about an append before it reaches storage: the versions, the
recorded time, the hash chain, the view changes (by folding the inline projections) and
the blob references. The backend then commits all of it in one transaction.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import structlog

from eventlog.clock import Clock, read_clock, system_clock
from eventlog.errors import (
    CommitOutcomeUnknown,
    InvalidInput,
    PayloadTooLarge,
    StorageError,
    VersionConflict,
)
from eventlog.events import Event, EventRegistry, default_registry
from eventlog.hashing import GENESIS_HASH, content_digest, event_hash, recompute_hash
from eventlog.records import (
    AppendResult,
    ExpectedVersion,
    LogPage,
    RecordedEvent,
    StoredEvent,
    StreamProblem,
    VerifyReport,
)
from eventlog.storage.base import AppendRequest, PendingEvent, StorageBackend, StreamVersionTaken
from eventlog.validation import check_id, check_positive_limit
from projections.base import Projection
from projections.changes import Change
from projections.query import ViewQuery
from projections.views import STREAM_HEADS
from projections.views import metadata as view_metadata

# The stores are named for type checkers only: `open_log` builds them and hands them to
# the log (`attach_stores`); at run time the log never imports a store.
if TYPE_CHECKING:
    from eventlog.checkpoints.store import CheckpointStore
    from eventlog.interrupts.store import InterruptStore

logger = structlog.get_logger(__name__)

DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""The default largest encoded event, and largest blob, accepted (16 MiB)."""

_MAX_APPEND_ATTEMPTS = 64  # an ANY append retries this often under contention
_HEAD_CACHE_SIZE = 10_000
_PAGE = 500
_MAX_VERSION = 2**63 - 1


class EventLog:
    """An append-only, hash-chained log of events, with inline projections.

    Open one with `eventlog.open_log`, which also builds the stores over it
    (``log.checkpoints``, ``log.interrupts``). Everything is scoped by ``tenant_id``: no
    read returns another tenant's events, blobs or view rows. ``projections`` are the
    inline projections folded into every append (``projections.INLINE_PROJECTIONS`` for
    the stores' views).
    """

    def __init__(
        self,
        storage: StorageBackend,
        *,
        projections: Sequence[Projection],
        registry: EventRegistry | None = None,
        clock: Clock = system_clock,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.storage = storage
        self.registry = registry if registry is not None else default_registry
        self.projections: tuple[Projection, ...] = tuple(projections)
        self.clock = clock
        self.max_payload_bytes = check_positive_limit("max_payload_bytes", max_payload_bytes)
        self.schema_revision: str | None = None
        self._checkpoints: CheckpointStore | None = None
        self._interrupts: InterruptStore | None = None
        self._heads: OrderedDict[tuple[str, str], tuple[int, bytes]] = OrderedDict()
        self._closed = False

    async def append(
        self,
        tenant_id: str,
        stream_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | ExpectedVersion = ExpectedVersion.ANY,
        attach: Iterable[bytes] = (),
        release: Mapping[bytes, int] | None = None,
    ) -> AppendResult:
        """Append ``events`` to a stream in one transaction.

        ``expected_version`` is `ANY` (append at the end, retrying internally on a race),
        `NO_STREAM`, or the exact version the stream must be at; on a mismatch
        `VersionConflict` is raised and nothing is written. ``attach`` are blob payloads
        stored content-addressed in the same transaction (each adds one reference);
        ``release`` drops references by digest, deleting a blob at zero.
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        expected = _check_expected(expected_version)
        recorded_at = read_clock(self.clock)
        drafts = [
            _Draft(uuid.uuid4(), tag, data, event, recorded_at)
            for tag, data, event in self._encode(events)
        ]
        return await self._commit(
            tenant_id, stream_id, drafts, expected, self._blob_adds(attach),
            _check_releases(release),
        )

    async def append_recorded(
        self,
        tenant_id: str,
        events: Sequence[StoredEvent],
        *,
        blobs: Mapping[bytes, tuple[bytes, int]] | None = None,
    ) -> AppendResult:
        """Append already-recorded events of ONE stream exactly as they are (an import).

        Each event keeps its id, version, recorded time, bytes and hashes; the inline
        projections fold them as any append's. ``blobs`` maps a digest to its payload and
        the references to add. The events must continue the stream (the next version,
        linked to its head hash), else `VersionConflict`; each must hash to its recorded
        hash, else `InvalidInput`. Nothing is written in either case.
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        if isinstance(events, StoredEvent) or not isinstance(events, Sequence) or not events:
            raise InvalidInput("events", "must be a non-empty sequence of stored events")
        stream_id = check_id("stream_id", events[0].stream_id)
        if any(stored.stream_id != stream_id for stored in events):
            raise InvalidInput("events", "must all belong to one stream")
        drafts = [
            _Draft(stored.event_id, stored.type, stored.data, self.decode(stored).event,
                   stored.recorded_at)
            for stored in events
        ]
        return await self._commit(
            tenant_id, stream_id, drafts, events[0].version - 1, dict(blobs or {}), {},
            recorded=events,
        )

    async def _commit(
        self,
        tenant_id: str,
        stream_id: str,
        drafts: list[_Draft],
        expected: int | ExpectedVersion,
        blob_adds: dict[bytes, tuple[bytes, int]],
        releases: dict[bytes, int],
        *,
        recorded: Sequence[StoredEvent] | None = None,
    ) -> AppendResult:
        """Chain ``drafts`` onto the stream's head and commit them, retrying as allowed."""
        event_ids = [draft.event_id for draft in drafts]
        recorded_at = drafts[-1].recorded_at
        uncertain = False  # an earlier attempt may have committed without our hearing it
        for attempt in range(_MAX_APPEND_ATTEMPTS):
            head = await self._head(tenant_id, stream_id, fresh=attempt > 0)
            if expected is not ExpectedVersion.ANY and _version(head) != expected:
                head = await self._head(tenant_id, stream_id, fresh=True)
                if _version(head) != expected:
                    if uncertain and (own := await self._own_events(tenant_id, event_ids)):
                        return self._appended(own, recorded_at)
                    self._raise_if_unexpected(stream_id, expected, head)
            request = self._prepare(tenant_id, stream_id, head, drafts, blob_adds, releases)
            if recorded is not None:
                _check_recorded(request, recorded)
            try:
                positions = await self.storage.append(request)
            except (StreamVersionTaken, CommitOutcomeUnknown) as error:
                self._heads.pop((tenant_id, stream_id), None)
                uncertain = uncertain or isinstance(error, CommitOutcomeUnknown)
                if uncertain and (own := await self._own_events(tenant_id, event_ids)):
                    logger.warning("commit_outcome_resolved", stream=stream_id, committed=True)
                    return self._appended(own, recorded_at)
                continue
            return self._appended(_stored(request, positions), recorded_at)
        actual_head = await self._head(tenant_id, stream_id, fresh=True)
        raise VersionConflict(stream_id, "any", _version(actual_head))

    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int = 1, *, limit: int | None = None
    ) -> AsyncIterator[RecordedEvent]:
        """Every event of one stream from ``from_version`` on (at most ``limit``), in order."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        if isinstance(from_version, bool) or not isinstance(from_version, int):
            raise InvalidInput("from_version", f"must be a whole number, not {from_version!r}")
        left = _MAX_VERSION if limit is None else check_positive_limit("limit", limit)
        version = max(from_version, 1)
        while version <= _MAX_VERSION and left > 0:  # beyond it no event can exist (int64)
            page = await self.storage.read_stream(
                tenant_id, stream_id, version, min(_PAGE, left)
            )
            for stored in page:
                yield self.decode(stored)
            if len(page) < min(_PAGE, left):
                return
            left -= len(page)
            version = page[-1].version + 1

    async def read_all(
        self, after: str | None = None, limit: int = _PAGE, tenant_id: str | None = None
    ) -> LogPage:
        """A page of the log in log order after the cursor ``after``; gap-safe.

        Log order is position order on single-writer backends. On PostgreSQL it is
        (writer transaction, position): an event never appears before one that committed
        ahead of it became visible, so following with the returned cursor never skips.
        """
        self._check_open("read")
        check_positive_limit("limit", limit, maximum=10_000)
        if after is not None and not isinstance(after, str):
            raise InvalidInput("after", f"must be a cursor string, not {after!r}")
        if tenant_id is not None:
            check_id("tenant_id", tenant_id)
        rows, cursor = await self.storage.read_all(after, limit, tenant_id)
        return LogPage(events=[self.decode(row) for row in rows], cursor=cursor)

    async def wait_readable(self, max_wait: float = 30.0) -> bool:
        """Wait until every event committed before this call is readable by `read_all`.

        Immediate on single-writer backends. On PostgreSQL `read_all` shows an event only
        once every transaction older than its writer has ended (that is what makes
        following gap-safe), so a whole-log read that must include everything committed
        so far (verify, rebuild, export) waits here first. Returns False if a transaction
        stayed open past ``max_wait`` seconds.
        """
        self._check_open("read")
        return await self.storage.wait_readable(max_wait)

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        """A blob's bytes by digest within a tenant, or None."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        _check_digest("digest", digest)
        return await self.storage.get_blob(tenant_id, digest)

    async def verify(self, tenant_id: str | None = None) -> VerifyReport:
        """Recompute every stream's hash chain from the stored bytes.

        Reports, per stream, the first broken link, hash mismatch or missing version, and
        a stream whose chain ends before the version its head row records (a truncated
        tail, or a stream whose events are gone altogether).
        """
        self._check_open("verify")
        if tenant_id is not None:
            check_id("tenant_id", tenant_id)
        where = {} if tenant_id is None else {"tenant_id": tenant_id}
        heads = {
            (row["tenant_id"], row["stream_id"]): row
            for row in await self.storage.query(ViewQuery(STREAM_HEADS, where))
        }
        keeps_heads = any(STREAM_HEADS in projection.tables for projection in self.projections)
        checker = _ChainChecker(heads, keeps_heads=keeps_heads)
        async for stored in self.storage.scan_streams(tenant_id):
            checker.feed(stored)
        checker.end_scan()
        for tenant, stream in list(checker.headless):
            where = {"tenant_id": tenant, "stream_id": stream}
            if not await self.storage.query(ViewQuery(STREAM_HEADS, where)):
                checker.still_headless((tenant, stream))
        return checker.finish()

    # -- the read side: what stores, the CLI and export/import read through ---------------

    @property
    def backend_name(self) -> str:
        """The backend's short name: ``memory``, ``sqlite``, ``postgresql`` or ``file``."""
        return self.storage.name

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        """Rows of one view table answering ``query``, as plain dicts.

        The table must be one of the views (`projections.views.metadata`), and a
        ``tenant_id`` condition must be a valid id: no read crosses into another tenant by
        accident of a malformed id.
        """
        self._check_open("query")
        _check_query(query)
        return await self.storage.query(query)

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        """The stream's last version and that event's hash, read afresh; None if empty."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        return await self._head(tenant_id, stream_id, fresh=True)

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> RecordedEvent | None:
        """The committed event with this id in this tenant, or None."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        if not isinstance(event_id, uuid.UUID):
            raise InvalidInput("event_id", f"must be a UUID, not {event_id!r}"[:200])
        stored = await self.storage.find_event(tenant_id, event_id)
        return None if stored is None else self.decode(stored)

    async def blob_refs(self, tenant_id: str) -> dict[bytes, int]:
        """Reference counts of a tenant's stored blobs, by digest."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        return dict(await self.storage.blob_refs(tenant_id))

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        """Every view table's rows, sorted by primary key (to compare with a rebuild)."""
        self._check_open("read")
        return await self.storage.dump_views()

    def decode(self, stored: StoredEvent) -> RecordedEvent:
        """Decode a stored row into a `RecordedEvent` (unknown tags raise)."""
        event = self.registry.decode(
            stored.type, stored.data, stream_id=stored.stream_id, version=stored.version
        )
        return RecordedEvent(
            position=stored.position,
            event_id=stored.event_id,
            tenant_id=stored.tenant_id,
            stream_id=stored.stream_id,
            version=stored.version,
            recorded_at=stored.recorded_at,
            type=stored.type,
            data=stored.data,
            prev_hash=stored.prev_hash,
            hash=stored.hash,
            event=event,
        )

    def attach_stores(self, *, checkpoints: CheckpointStore, interrupts: InterruptStore) -> None:
        """Hand the log the stores built over it (`open_log` does), as ``log.checkpoints``
        and ``log.interrupts``."""
        self._checkpoints, self._interrupts = checkpoints, interrupts

    @property
    def checkpoints(self) -> CheckpointStore:
        """The workflow checkpoint store over this log."""
        if self._checkpoints is None:
            raise InvalidInput("checkpoints", "this log has no stores: open it with open_log")
        return self._checkpoints

    @property
    def interrupts(self) -> InterruptStore:
        """The human-in-the-loop interrupt store over this log."""
        if self._interrupts is None:
            raise InvalidInput("interrupts", "this log has no stores: open it with open_log")
        return self._interrupts

    async def close(self) -> None:
        """Release the backend's connections and locks; the log refuses work afterwards."""
        if not self._closed:
            self._closed = True
            await self.storage.close()

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise StorageError(self.storage.name, operation, "the log is closed")

    # -- preparing an append ------------------------------------------------------------

    def _encode(self, events: Sequence[Event]) -> list[tuple[str, bytes, Event]]:
        if isinstance(events, Event) or not isinstance(events, Sequence) or not events:
            raise InvalidInput("events", "must be a non-empty sequence of events")
        encoded = []
        for event in events:
            tag, data = self.registry.encode(event)
            if len(data) > self.max_payload_bytes:
                raise PayloadTooLarge(f"event {tag!r}", len(data), self.max_payload_bytes)
            encoded.append((tag, data, event))
        return encoded

    def _blob_adds(self, attach: Iterable[bytes]) -> dict[bytes, tuple[bytes, int]]:
        adds: dict[bytes, tuple[bytes, int]] = {}
        for payload in attach:
            if not isinstance(payload, bytes):
                raise InvalidInput("attach", "blobs must be bytes")
            if len(payload) > self.max_payload_bytes:
                raise PayloadTooLarge("blob", len(payload), self.max_payload_bytes)
            digest = content_digest(payload)
            adds[digest] = (payload, adds.get(digest, (payload, 0))[1] + 1)
        return adds

    def _prepare(
        self,
        tenant_id: str,
        stream_id: str,
        head: tuple[int, bytes] | None,
        drafts: list[_Draft],
        blob_adds: dict[bytes, tuple[bytes, int]],
        releases: dict[bytes, int],
    ) -> AppendRequest:
        """The one place an append is chained: versions, hashes and view changes."""
        version, prev_hash = head if head is not None else (0, GENESIS_HASH)
        pending: list[PendingEvent] = []
        changes: list[tuple[int, Change]] = []
        for index, draft in enumerate(drafts):
            version += 1
            digest = event_hash(
                tenant_id=tenant_id, stream_id=stream_id, version=version,
                event_id=draft.event_id, type=draft.type, recorded_at=draft.recorded_at,
                data=draft.data, prev_hash=prev_hash,
            )
            pending.append(PendingEvent(
                event_id=draft.event_id, version=version, recorded_at=draft.recorded_at,
                type=draft.type, data=draft.data, prev_hash=prev_hash, hash=digest,
            ))
            recorded = RecordedEvent(
                position=0, event_id=draft.event_id, tenant_id=tenant_id, stream_id=stream_id,
                version=version, recorded_at=draft.recorded_at, type=draft.type,
                data=draft.data, prev_hash=prev_hash, hash=digest, event=draft.event,
            )
            changes.extend(self._view_changes(index, recorded))
            prev_hash = digest
        return AppendRequest(
            tenant_id=tenant_id, stream_id=stream_id, events=pending, changes=changes,
            blob_adds=blob_adds, blob_releases=releases,
        )

    def _view_changes(self, index: int, recorded: RecordedEvent) -> list[tuple[int, Change]]:
        """The inline projections' changes for the ``index``-th event of an append."""
        return [
            (index, change)
            for projection in self.projections
            for change in projection.fold(recorded)
        ]

    async def _own_events(
        self, tenant_id: str, event_ids: list[uuid.UUID]
    ) -> list[StoredEvent] | None:
        """Our events if an earlier attempt committed them (found by their ids), else None."""
        first = await self.storage.find_event(tenant_id, event_ids[0])
        if first is None:
            return None
        rows = await self.storage.read_stream(
            tenant_id, first.stream_id, first.version, len(event_ids)
        )
        return rows if [row.event_id for row in rows] == event_ids else None

    def _appended(self, stored: list[StoredEvent], recorded_at: datetime) -> AppendResult:
        """Remember the stream head the stored events end at, log, and report them."""
        last = stored[-1]
        self._remember(last.tenant_id, last.stream_id, (last.version, last.hash))
        logger.debug(
            "appended", tenant=last.tenant_id, stream=last.stream_id, count=len(stored),
            version=last.version, position=last.position,
        )
        return AppendResult(
            stream_id=last.stream_id,
            version=last.version,
            positions=tuple(row.position for row in stored),
            event_ids=tuple(row.event_id for row in stored),
            recorded_at=recorded_at,
        )

    # -- stream heads -------------------------------------------------------------------

    async def _head(
        self, tenant_id: str, stream_id: str, *, fresh: bool
    ) -> tuple[int, bytes] | None:
        key = (tenant_id, stream_id)
        if not fresh and key in self._heads:
            self._heads.move_to_end(key)
            return self._heads[key]
        head = await self.storage.stream_head(tenant_id, stream_id)
        if head is None:
            self._heads.pop(key, None)
        else:
            self._remember(tenant_id, stream_id, head)
        return head

    def _remember(self, tenant_id: str, stream_id: str, head: tuple[int, bytes]) -> None:
        self._heads[(tenant_id, stream_id)] = head
        self._heads.move_to_end((tenant_id, stream_id))
        if len(self._heads) > _HEAD_CACHE_SIZE:
            self._heads.popitem(last=False)

    def _raise_if_unexpected(
        self, stream_id: str, expected: int | ExpectedVersion, head: tuple[int, bytes] | None
    ) -> None:
        actual = _version(head)
        if actual != expected:
            shown: int | str = "no stream" if expected == 0 else expected  # type: ignore[assignment]
            logger.info("conflicted", stream=stream_id, expected=shown, actual=actual)
            raise VersionConflict(stream_id, shown, actual)


class _Draft(NamedTuple):
    """One event of an append before it is chained onto the stream."""

    event_id: uuid.UUID
    type: str
    data: bytes
    event: Event
    recorded_at: datetime


def _check_recorded(request: AppendRequest, recorded: Sequence[StoredEvent]) -> None:
    """An import's events must chain exactly as recorded onto the stream's head."""
    for pending, stored in zip(request.events, recorded, strict=True):
        if (pending.version, pending.prev_hash) != (stored.version, stored.prev_hash):
            raise VersionConflict(request.stream_id, recorded[0].version - 1,
                                  request.events[0].version - 1)
        if pending.hash != stored.hash:
            raise InvalidInput("events", f"stream {request.stream_id!r} version "
                                         f"{stored.version} does not hash to its recorded hash")


class _ChainChecker:
    """Checks streams one after another, fed in (tenant, stream, version) order.

    The head rows were read before the scan, and a live log only grows, so a stream may
    have moved past its head row by the time it is scanned (or appeared after the heads
    were read): its chain must then pass through the head's (version, hash), and a stream
    without a head row is re-checked afterwards (`headless`) rather than reported.
    """

    def __init__(self, heads: dict[tuple[str, str], dict[str, Any]], *, keeps_heads: bool
                 ) -> None:
        self.heads = heads
        self.keeps_heads = keeps_heads
        self.problems: list[StreamProblem] = []
        self.headless: dict[tuple[str, str], int] = {}
        self.streams = 0
        self.events = 0
        self.key: tuple[str, str] | None = None
        self.next_version = 1
        self.prev_hash = GENESIS_HASH
        self.hash_at_head: bytes | None = None
        self.failed = False

    def feed(self, stored: StoredEvent) -> None:
        key = (stored.tenant_id, stored.stream_id)
        if key != self.key:
            self._close_stream()
            self.key, self.next_version, self.prev_hash, self.failed = key, 1, GENESIS_HASH, False
            self.hash_at_head = None
            self.streams += 1
        self.events += 1
        if self.failed:
            return
        problem = self._check(stored)
        if problem is not None:
            self.problems.append(problem)
            self.failed = True
            return
        self.next_version += 1
        self.prev_hash = stored.hash
        head = self.heads.get(key)
        if head is not None and head["version"] == stored.version:
            self.hash_at_head = stored.hash

    def _check(self, stored: StoredEvent) -> StreamProblem | None:
        def problem(kind: str, version: int, detail: str) -> StreamProblem:
            return StreamProblem(tenant_id=stored.tenant_id, stream_id=stored.stream_id,
                                 version=version, kind=kind, detail=detail)

        if stored.version != self.next_version:
            return problem("missing_version", self.next_version,
                           f"version {self.next_version} is missing (next stored is "
                           f"{stored.version})")
        if stored.prev_hash != self.prev_hash:
            return problem("broken_link", stored.version,
                           "prev_hash does not match the previous event's hash")
        if recompute_hash(stored) != stored.hash:
            return problem("hash_mismatch", stored.version,
                           "the stored bytes do not hash to the stored hash")
        return None

    def _close_stream(self) -> None:
        if self.key is None:
            return
        head = self.heads.pop(self.key, None)
        last = self.next_version - 1
        if self.failed:
            return
        if head is None:
            if self.keeps_heads:
                self.headless[self.key] = last
            return
        if head["version"] > last:
            self._problem(self.key, last + 1, "truncated",
                          f"the chain ends at version {last}, its head records {head['version']}")
        elif head["head_hash"] != self.hash_at_head:
            self._problem(self.key, head["version"], "head_mismatch",
                          "the stream head row does not match the chain")

    def still_headless(self, key: tuple[str, str]) -> None:
        """Report a stream that has events and, read again after the scan, no head row."""
        self._problem(key, self.headless[key], "head_mismatch",
                      "events are stored but the stream has no head row")

    def _problem(self, key: tuple[str, str], version: int, kind: str, detail: str) -> None:
        self.problems.append(StreamProblem(tenant_id=key[0], stream_id=key[1],
                                           version=version, kind=kind, detail=detail))

    def end_scan(self) -> None:
        """The scan is over: close the last stream."""
        self._close_stream()
        self.key = None

    def finish(self) -> VerifyReport:
        for (tenant_id, stream_id), head in sorted(self.heads.items()):
            self.streams += 1
            self._problem((tenant_id, stream_id), 1, "truncated",
                          f"no events are stored, its head records version {head['version']}")
        self.problems.sort(key=lambda problem: (problem.tenant_id, problem.stream_id))
        return VerifyReport(streams=self.streams, events=self.events, problems=self.problems)


def _stored(request: AppendRequest, positions: list[int]) -> list[StoredEvent]:
    """The events of a committed request as the storage now holds them."""
    return [
        StoredEvent(
            position=position, event_id=pending.event_id, tenant_id=request.tenant_id,
            stream_id=request.stream_id, version=pending.version,
            recorded_at=pending.recorded_at, type=pending.type, data=pending.data,
            prev_hash=pending.prev_hash, hash=pending.hash,
        )
        for pending, position in zip(request.events, positions, strict=True)
    ]


def _version(head: tuple[int, bytes] | None) -> int:
    return 0 if head is None else head[0]


def _check_expected(expected: object) -> int | ExpectedVersion:
    if expected is ExpectedVersion.ANY:
        return expected
    if expected is ExpectedVersion.NO_STREAM:
        return 0
    if isinstance(expected, bool) or not isinstance(expected, int):
        raise InvalidInput(
            "expected_version", f"must be ANY, NO_STREAM or a version ≥ 0, not {expected!r}"
        )
    if expected < 0:
        raise InvalidInput("expected_version", f"must not be negative, not {expected}")
    return expected


def _check_releases(release: Mapping[bytes, int] | None) -> dict[bytes, int]:
    releases = dict(release or {})
    for digest, count in releases.items():
        _check_digest("release", digest)
        check_positive_limit("release count", count)
    return releases


def _check_query(query: object) -> None:
    if not isinstance(query, ViewQuery):
        raise InvalidInput("query", f"must be a ViewQuery, not {query!r}"[:200])
    if query.table not in view_metadata.tables:
        raise InvalidInput("query", f"names no view table: {query.table!r}"[:200])
    tenant_id = query.where.get("tenant_id")
    if isinstance(tenant_id, str):
        check_id("tenant_id", tenant_id)


def _check_digest(field: str, digest: object) -> bytes:
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise InvalidInput(field, f"must be a 32-byte SHA-256 digest, not {digest!r}"[:200])
    return digest
