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
from typing import TYPE_CHECKING, Any

from eventlog._logging import get_logger
from eventlog.clock import Clock, read_clock, system_clock
from eventlog.errors import (
    CommitOutcomeUnknown,
    InvalidInput,
    PayloadTooLarge,
    StorageError,
    VersionConflict,
)
from eventlog.events import Event, EventRegistry, default_registry
from eventlog.hashing import GENESIS_HASH, content_digest, event_hash
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
from projections.query import ViewQuery

# Projection and Change are imported for types only: at run time they would close the
# cycle projections.base -> eventlog.records -> eventlog -> eventlog.log -> projections.base.
if TYPE_CHECKING:
    from eventlog.checkpoints import CheckpointStore
    from eventlog.interrupts import InterruptOptions, InterruptStore, Operation
    from projections.base import Projection
    from projections.changes import Change

logger = get_logger(__name__)

DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""The default largest encoded event, and largest blob, accepted (16 MiB)."""

_MAX_APPEND_ATTEMPTS = 64  # an ANY append retries this often under contention
_HEAD_CACHE_SIZE = 10_000
_PAGE = 500
_MAX_VERSION = 2**63 - 1


class EventLog:
    """An append-only, hash-chained log of events, with inline projections.

    Open one with `eventlog.open_log`. Everything is scoped by ``tenant_id``: no read
    returns another tenant's events, blobs or view rows.
    """

    def __init__(
        self,
        storage: StorageBackend,
        *,
        registry: EventRegistry | None = None,
        projections: Sequence[Projection] | None = None,
        clock: Clock = system_clock,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        interrupt_options: InterruptOptions | None = None,
        operations: Iterable[Operation] | None = None,
    ) -> None:
        from projections import INLINE_PROJECTIONS

        self.storage = storage
        self.registry = registry if registry is not None else default_registry
        self.projections: tuple[Projection, ...] = tuple(
            projections if projections is not None else INLINE_PROJECTIONS
        )
        self.clock = clock
        self.max_payload_bytes = check_positive_limit("max_payload_bytes", max_payload_bytes)
        self.schema_revision: str | None = None
        self._checkpoints: CheckpointStore | None = None
        self._interrupts: InterruptStore | None = None
        self.interrupt_options = interrupt_options
        self.operations = operations
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
        encoded = self._encode(events)
        blob_adds = self._blob_adds(attach)
        releases = _check_releases(release)
        event_ids = [uuid.uuid4() for _ in encoded]
        recorded_at = read_clock(self.clock)
        uncertain = False  # an earlier attempt may have committed without our hearing it
        for attempt in range(_MAX_APPEND_ATTEMPTS):
            head = await self._head(tenant_id, stream_id, fresh=attempt > 0)
            if expected is not ExpectedVersion.ANY and _version(head) != expected:
                head = await self._head(tenant_id, stream_id, fresh=True)
                if _version(head) != expected:
                    if uncertain and (own := await self._own_events(tenant_id, event_ids)):
                        return self._appended(own, recorded_at)
                    self._raise_if_unexpected(stream_id, expected, head)
            request = self._prepare(
                tenant_id, stream_id, head, encoded, event_ids, recorded_at, blob_adds, releases
            )
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
        self, tenant_id: str, stream_id: str, from_version: int = 1
    ) -> AsyncIterator[RecordedEvent]:
        """Every event of one stream from ``from_version`` on, in version order."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        if isinstance(from_version, bool) or not isinstance(from_version, int):
            raise InvalidInput("from_version", f"must be a whole number, not {from_version!r}")
        version = max(from_version, 1)
        while version <= _MAX_VERSION:  # beyond it no event can exist (SQL stores int64)
            page = await self.storage.read_stream(tenant_id, stream_id, version, _PAGE)
            for stored in page:
                yield self.decode(stored)
            if len(page) < _PAGE:
                return
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

    async def get_blobs(self, tenant_id: str, digests: Iterable[bytes]) -> dict[bytes, bytes]:
        """The blobs of ``digests`` that exist within the tenant, by digest (one read on SQL
        backends); a purged or unknown digest is simply absent from the result."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        wanted = [_check_digest("digests", digest) for digest in dict.fromkeys(digests)]
        return await self.storage.get_blobs(tenant_id, wanted) if wanted else {}

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        """Rows of one view table answering ``query``: the read side stores build on."""
        self._check_open("query")
        return await self.storage.query(query)

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
            for row in await self.storage.query(ViewQuery("stream_heads", where))
        }
        keeps_heads = any("stream_heads" in projection.tables for projection in self.projections)
        checker = _ChainChecker(heads, keeps_heads=keeps_heads)
        async for stored in self.storage.scan_streams(tenant_id):
            checker.feed(stored)
        checker.end_scan()
        for tenant, stream in list(checker.headless):
            where = {"tenant_id": tenant, "stream_id": stream}
            if not await self.storage.query(ViewQuery("stream_heads", where)):
                checker.still_headless((tenant, stream))
        return checker.finish()

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

    @property
    def checkpoints(self) -> CheckpointStore:
        """The workflow checkpoint store over this log."""
        from eventlog.checkpoints import CheckpointStore

        if self._checkpoints is None:
            self._checkpoints = CheckpointStore(self)
        return self._checkpoints

    @property
    def interrupts(self) -> InterruptStore:
        """The human-in-the-loop interrupt store over this log."""
        from eventlog.interrupts import InterruptStore

        if self._interrupts is None:
            self._interrupts = InterruptStore(self, self.interrupt_options, self.operations)
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
        encoded: list[tuple[str, bytes, Event]],
        event_ids: list[uuid.UUID],
        recorded_at: datetime,
        blob_adds: dict[bytes, tuple[bytes, int]],
        releases: dict[bytes, int],
    ) -> AppendRequest:
        version, prev_hash = head if head is not None else (0, GENESIS_HASH)
        pending: list[PendingEvent] = []
        changes: list[tuple[int, Change]] = []
        for index, ((tag, data, event), event_id) in enumerate(
            zip(encoded, event_ids, strict=True)
        ):
            version += 1
            digest = event_hash(
                tenant_id=tenant_id, stream_id=stream_id, version=version, event_id=event_id,
                type=tag, recorded_at=recorded_at, data=data, prev_hash=prev_hash,
            )
            pending.append(PendingEvent(
                event_id=event_id, version=version, recorded_at=recorded_at, type=tag,
                data=data, prev_hash=prev_hash, hash=digest,
            ))
            recorded = RecordedEvent(
                position=0, event_id=event_id, tenant_id=tenant_id, stream_id=stream_id,
                version=version, recorded_at=recorded_at, type=tag, data=data,
                prev_hash=prev_hash, hash=digest, event=event,
            )
            changes.extend(self.view_changes(index, recorded))
            prev_hash = digest
        return AppendRequest(
            tenant_id=tenant_id, stream_id=stream_id, events=pending, changes=changes,
            blob_adds=blob_adds, blob_releases=releases,
        )

    def view_changes(self, index: int, recorded: RecordedEvent) -> list[tuple[int, Change]]:
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
        recomputed = event_hash(
            tenant_id=stored.tenant_id, stream_id=stored.stream_id, version=stored.version,
            event_id=stored.event_id, type=stored.type, recorded_at=stored.recorded_at,
            data=stored.data, prev_hash=stored.prev_hash,
        )
        if recomputed != stored.hash:
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


def _check_digest(field: str, digest: object) -> bytes:
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise InvalidInput(field, f"must be a 32-byte SHA-256 digest, not {digest!r}"[:200])
    return digest
