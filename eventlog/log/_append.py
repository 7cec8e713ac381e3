"""The append path: chain drafts onto a stream's head, commit, retry, resolve lost commits.

The log decides everything about an append before it reaches storage: the versions, the
recorded time, the hash chain, the view changes (by folding the inline projections) and
the blob references. The backend then commits all of it in one transaction. `prepare` is
the one place an event is chained, hashed and (with a writer key) signed, for new events
and imported ones alike (an imported event keeps the signature it was recorded with).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import datetime
from typing import NamedTuple

from eventlog._logging import get_logger
from eventlog.errors import CommitOutcomeUnknown, InvalidInput, StorageError, VersionConflict
from eventlog.events import Event, EventRegistry
from eventlog.hashing import GENESIS_HASH, event_hash
from eventlog.log._heads import Head, HeadCache, version
from eventlog.log._holdings import Holdings, refuse_beyond, releasable, releases_any
from eventlog.records import AppendResult, ExpectedVersion, RecordedEvent, StoredEvent
from eventlog.storage.base import AppendRequest, PendingEvent, StorageBackend, StreamVersionTaken
from eventlog.storage.requests import counted_adds
from eventlog.telemetry import append_span, note_retry
from eventlog.validation import check_positive_limit
from projections.base import Projection
from projections.changes import Change
from projections.query import RowRequired
from projections.views import metadata as view_metadata

logger = get_logger("eventlog.log")

MAX_APPEND_ATTEMPTS = 64  # an ANY append retries this often under contention
_BACKOFF_BASE = 0.001
_BACKOFF_MAX = 0.05
_HOLDING: ContextVar[bool] = ContextVar("eventlog_holding", default=False)
"""Whether the current task is inside a hold of a stream (`Appender.hold`)."""


class Draft(NamedTuple):
    """One event of an append before it is chained onto the stream."""

    event_id: uuid.UUID
    type: str
    data: bytes
    event: Event
    recorded_at: datetime
    actor: str | None = None
    """Who appends the event (None: not given); chained and stored with it."""
    signature: bytes | None = None
    """An imported event's recorded signature, stored as it is (new events are signed
    when they are chained: `prepare`)."""


class Part(NamedTuple):
    """One stream's part of a batched append, checked and encoded."""

    tenant_id: str
    stream_id: str
    drafts: list[Draft]
    expected: int | ExpectedVersion
    blob_adds: dict[bytes, tuple[bytes, int]]
    releases: dict[bytes, int]
    recorded: Sequence[StoredEvent] | None = None
    required: tuple[RowRequired, ...] = ()


class _Outcome:
    """Whether an earlier attempt may have committed without our hearing it."""

    uncertain = False

    @contextmanager
    def unknown_if_uncertain(self) -> Iterator[None]:
        """A storage failure after an uncertain attempt (the lookup that would tell failed
        too) reaches the caller as `CommitOutcomeUnknown`, not as a plain read failure."""
        try:
            yield
        except StorageError as error:
            if not self.uncertain or isinstance(error, CommitOutcomeUnknown):
                raise
            raise CommitOutcomeUnknown(
                error.backend, "append", f"the outcome could not be looked up ({error})"
            ) from error


class _Turn:
    """The in-process queue of one stream's single appends (`Appender.turn`)."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class Appender:
    """Commits prepared appends: the retry loop and commit-outcome resolution."""

    def __init__(
        self, storage: StorageBackend, heads: HeadCache, projections: Sequence[Projection],
        registry: EventRegistry, sign: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.storage = storage
        self.heads = heads
        self.projections = projections
        self.registry = registry
        self.sign = sign
        """The writer key's signature of an event hash (`EventSigner`); None signs nothing."""
        self._turns: dict[tuple[int, str, str], _Turn] = {}

    async def commit(
        self,
        tenant_id: str,
        stream_id: str,
        drafts: list[Draft],
        expected: int | ExpectedVersion,
        blob_adds: dict[bytes, tuple[bytes, int]],
        releases: dict[bytes, int],
        *,
        recorded: Sequence[StoredEvent] | None = None,
        required: tuple[RowRequired, ...] = (),
    ) -> AppendResult:
        """Chain ``drafts`` onto the stream's head and commit them, retrying as allowed.

        ``recorded`` (an import) are the events as a source log stored them: each prepared
        event must equal its recorded one. ``required`` are view rows the storage checks
        as it commits (`RowRequired`).
        """
        part = Part(tenant_id, stream_id, drafts, expected, blob_adds, releases, recorded,
                    required)
        return (await self._commit([part], single=True))[0]

    async def commit_batch(self, parts: list[Part]) -> list[AppendResult]:
        """Chain every part onto its stream's head and commit them all in ONE transaction.

        The same rules as `commit`, for many streams at once: a part whose stream is not
        at its expected version raises `VersionConflict` and nothing of the batch is
        written; a version race re-reads the heads and retries (parts expecting `ANY`
        move to the new end, the others then conflict).
        """
        return await self._commit(parts, single=False)

    async def _commit(self, parts: list[Part], *, single: bool) -> list[AppendResult]:
        """`_attempts`, as one ``eventlog.append`` span with its metrics (`telemetry`)."""
        first = parts[0]
        with append_span(
            self.storage.database, self.storage.name, first.tenant_id, first.stream_id,
            len(parts),
            sum(len(part.drafts) for part in parts),
            sum(len(draft.data) for part in parts for draft in part.drafts)
            + sum(len(payload) for part in parts for payload, _ in part.blob_adds.values()),
        ):
            if not single:
                return await self._attempts(parts, single=single)
            async with self.turn(first.tenant_id, first.stream_id):
                return await self._attempts(parts, single=single)

    @asynccontextmanager
    async def turn(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        """One single append of the stream at a time from this process (its event loop).

        Concurrent appends to one stream (LangGraph's parallel tasks each writing to
        the thread) all chained onto the same cached head, so all but one lost the race
        and went round again (a failed statement, a backoff, then the stream's lock:
        `append_at_head`); queued here, each chains onto the head the one before it
        left in the cache. Appends from other processes still race, as before. Inside a
        hold (`hold`) the holding task appends without queueing: it already has the
        stream."""
        if _HOLDING.get():
            yield
            return
        key = (id(asyncio.get_running_loop()), tenant_id, stream_id)
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[key]

    async def _attempts(self, parts: list[Part], *, single: bool) -> list[AppendResult]:
        """The one retry loop: read the heads, check the expected versions and releases,
        chain and commit, and on a lost race or an unheard commit go round again.

        A ``single`` append (one part, `commit`) goes through the storage's `append`;
        when it expects ``ANY`` and lost a race it falls back on `append_at_head`, and a
        held stream's ``busy`` refusal reaches its caller as `VersionConflict` ("held").
        One that also releases blob references must check them against the head it
        chains onto, so after a lost race it decides and appends holding the stream
        (`hold`): the fallback's head could move between the check and its turn, and on
        a busy stream it lost that way again and again (up to 20 tries in a row with 8
        writers on 3 streams; all 64, most likely, in a CI run after a server restart).
        """
        outcome = _Outcome()
        with outcome.unknown_if_uncertain():
            keys = [(part.tenant_id, part.stream_id) for part in parts]
            holdings = self._holdings(parts)
            moves = any([part.expected is ExpectedVersion.ANY for part in parts])
            for attempt in range(MAX_APPEND_ATTEMPTS):
                if attempt and moves:
                    await asyncio.sleep(backoff(attempt))
                # A single ANY append that lost a race appends at the head read where no
                # other such append of the stream can move it (`append_at_head`), or,
                # releasing, holding the stream (unless its caller already holds one).
                at_head = single and attempt > 0 and moves
                held = at_head and bool(holdings) and not _HOLDING.get()
                heads: dict[tuple[str, str], Head | None] = {}
                try:
                    async with self.hold(*keys[0]) if held else nullcontext():
                        if not at_head or holdings:
                            # A release is checked against the stream as it is, never a
                            # cached head.
                            heads = await self._heads(keys, parts,
                                                      fresh=attempt > 0 or bool(holdings))
                            if (stale := _conflicting(parts, heads)) is not None:
                                if outcome.uncertain and (own := await self._own_batch(parts)):
                                    return own
                                _raise_conflict(stale.stream_id, stale.expected,
                                                heads[(stale.tenant_id, stale.stream_id)])
                            await self._check_releases(parts, heads, holdings)
                        if at_head and not held:
                            request, written = await self.storage.append_at_head(
                                *keys[0], lambda at: self._request(parts[0], at, holdings))
                            requests, positions = [request], [written]
                        else:
                            requests = [self._request(part, heads[key], holdings)
                                        for part, key in zip(parts, keys, strict=True)]
                            positions = ([await self.storage.append(requests[0])] if single
                                         else await self.storage.append_batch(requests))
                except (StreamVersionTaken, CommitOutcomeUnknown) as error:
                    for tenant_id, stream_id in keys:
                        self.heads.forget(tenant_id, stream_id)
                    if (single and not held and isinstance(error, StreamVersionTaken)
                            and error.reason == "busy"):
                        # Held (`EventLog.hold_stream`) behind another append mid-commit:
                        # nothing was written; the holder's caller decides again later.
                        raise VersionConflict(keys[0][1], "held",
                                              version(heads.get(keys[0]))) from None
                    _retried(error, keys[0][1], attempt)
                    outcome.uncertain |= isinstance(error, CommitOutcomeUnknown)
                    if outcome.uncertain and (own := await self._own_batch(parts)):
                        if single:
                            logger.warning("commit_outcome_resolved", stream=keys[0][1],
                                           committed=True)
                        else:
                            logger.warning("commit_outcome_resolved", streams=len(parts),
                                           committed=True)
                        return own
                    continue
                return [
                    self._appended(stored_events(request, stream_positions),
                                   part.drafts[-1].recorded_at)
                    for request, stream_positions, part in zip(requests, positions, parts,
                                                               strict=True)
                ]
            first = parts[0]
            actual_head = await self.heads.get(first.tenant_id, first.stream_id, fresh=True)
            raise VersionConflict(first.stream_id, "any", version(actual_head))

    @staticmethod
    def holding() -> bool:
        """Whether the current task is inside a hold (`hold`)."""
        return _HOLDING.get()

    @asynccontextmanager
    async def hold(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        """The storage's hold of one stream (`EventLog.hold_stream`), known to this task's
        appends as held: a releasing append inside does not hold again."""
        token = _HOLDING.set(True)
        try:
            async with self.storage.hold_stream(tenant_id, stream_id):
                yield
        finally:
            _HOLDING.reset(token)

    async def _heads(
        self, keys: list[tuple[str, str]], parts: Sequence[Part], *, fresh: bool
    ) -> dict[tuple[str, str], Head | None]:
        """The parts' stream heads (those expecting a stream that is not there are taken to
        be empty unless cached); a head that is not at its part's expected version is read
        again, fresh, before anyone concludes it conflicts."""
        if len(parts) == 1:  # one stream: the plain head read
            part = parts[0]
            head = await self.heads.get(part.tenant_id, part.stream_id, fresh=fresh,
                                        new=part.expected == 0)
            if part.expected is not ExpectedVersion.ANY and version(head) != part.expected:
                head = await self.heads.get(part.tenant_id, part.stream_id, fresh=True)
            return {keys[0]: head}
        new = frozenset(key for key, part in zip(keys, parts, strict=True) if part.expected == 0)
        heads = await self.heads.get_many(keys, fresh=fresh, new=new)
        stale = [key for key, part in zip(keys, parts, strict=True)
                 if part.expected is not ExpectedVersion.ANY
                 and version(heads[key]) != part.expected]
        if stale:
            heads.update(await self.heads.get_many(stale, fresh=True))
        return heads

    def _request(
        self, part: Part, head: Head | None, holdings: Mapping[tuple[str, str], Holdings]
    ) -> AppendRequest:
        """The part chained onto ``head``; `StreamVersionTaken` when the stream has moved
        past the version its releases were checked at (they are checked again)."""
        fold = holdings.get((part.tenant_id, part.stream_id))
        if fold is not None and fold.version != version(head):
            raise StreamVersionTaken()
        request = prepare(part.tenant_id, part.stream_id, head, part.drafts, part.blob_adds,
                          part.releases, self.projections, part.required,
                          sign=self.sign if part.recorded is None else None)
        if part.recorded is not None:
            check_recorded(request, part.recorded)
        return request

    def _holdings(self, parts: Sequence[Part]) -> dict[tuple[str, str], Holdings]:
        """A fold of each stream whose part releases blob references (only those pay a read)."""
        return {
            (part.tenant_id, part.stream_id):
                Holdings(self.storage, self.registry, part.tenant_id, part.stream_id)
            for part in parts
            if part.releases or (part.recorded is not None
                                 and releases_any([draft.event for draft in part.drafts]))
        }

    async def _check_releases(
        self, parts: Sequence[Part], heads: Mapping[tuple[str, str], Head | None],
        holdings: Mapping[tuple[str, str], Holdings],
    ) -> None:
        """Refuse (`ReleaseNotHeld`) a release beyond what the append's events give up of
        what their stream holds.

        An import's releases come for the whole batch at once (derived from its events), so
        they are checked against what all its streams' events give up, and each of those
        events against what its stream holds.
        """
        given: Counter[bytes] = Counter()
        imported: Counter[bytes] = Counter()
        for part in parts:
            key = (part.tenant_id, part.stream_id)
            if key not in holdings:
                continue
            held = await holdings[key].at(version(heads[key]))
            events = [draft.event for draft in part.drafts]
            if part.recorded is None:
                refuse_beyond(part.stream_id,
                              releasable(part.stream_id, held, events, strict=False),
                              part.releases)
            else:
                given += releasable(part.stream_id, held, events, strict=True)
                imported.update(part.releases)
        if imported:
            refuse_beyond(parts[0].stream_id, given, imported)

    async def _own_batch(self, parts: Sequence[Part]) -> list[AppendResult] | None:
        """The batch's results if an earlier attempt committed it (all or nothing: its
        first event's id decides), else None."""
        results = []
        for part in parts:
            own = await self._own_events(part.tenant_id, [d.event_id for d in part.drafts])
            if own is None:
                return None
            results.append(self._appended(own, part.drafts[-1].recorded_at))
        return results

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
        self.heads.remember(last.tenant_id, last.stream_id, (last.version, last.hash))
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


def _conflicting(
    parts: Sequence[Part], heads: Mapping[tuple[str, str], Head | None]
) -> Part | None:
    """The first part whose stream is not at its expected version, if any."""
    for part in parts:
        if part.expected is not ExpectedVersion.ANY and version(
                heads[(part.tenant_id, part.stream_id)]) != part.expected:
            return part
    return None


def _retried(error: Exception, stream_id: str, attempt: int) -> None:
    """Log (debug) that an append lost a race, was rolled back to break a deadlock, or
    may have committed unheard, and goes round again."""
    reason = (error.reason if isinstance(error, StreamVersionTaken)
              else "outcome_unknown")
    logger.debug("append_retried", stream=stream_id, reason=reason, attempt=attempt + 1)
    note_retry(reason)


def prepare(
    tenant_id: str,
    stream_id: str,
    head: Head | None,
    drafts: list[Draft],
    blob_adds: dict[bytes, tuple[bytes, int]],
    releases: dict[bytes, int],
    projections: Sequence[Projection],
    required: tuple[RowRequired, ...] = (),
    *,
    sign: Callable[[bytes], bytes] | None = None,
) -> AppendRequest:
    """The one place an append is chained: versions, hashes, signatures and view changes.

    With ``sign`` (the writer key's `EventSigner`) each event's hash is signed; without,
    each keeps its draft's signature (None, or an imported event's recorded one)."""
    at, prev_hash = head if head is not None else (0, GENESIS_HASH)
    pending: list[PendingEvent] = []
    changes: list[tuple[int, Change]] = []
    for index, draft in enumerate(drafts):
        at += 1
        digest = event_hash(
            tenant_id=tenant_id, stream_id=stream_id, version=at, event_id=draft.event_id,
            type=draft.type, recorded_at=draft.recorded_at, data=draft.data,
            prev_hash=prev_hash, actor=draft.actor,
        )
        signature = draft.signature if sign is None else sign(digest)
        pending.append(PendingEvent(
            event_id=draft.event_id, version=at, recorded_at=draft.recorded_at,
            type=draft.type, data=draft.data, prev_hash=prev_hash, hash=digest,
            actor=draft.actor, signature=signature,
        ))
        recorded = RecordedEvent(
            position=0, event_id=draft.event_id, tenant_id=tenant_id, stream_id=stream_id,
            version=at, recorded_at=draft.recorded_at, type=draft.type, data=draft.data,
            prev_hash=prev_hash, hash=digest, actor=draft.actor, signature=signature,
            event=draft.event,
        )
        changes.extend(
            (index, change) for projection in projections for change in projection.fold(recorded)
        )
        prev_hash = digest
    return AppendRequest(
        tenant_id=tenant_id, stream_id=stream_id, events=pending, changes=changes,
        blob_adds=counted_adds(blob_adds), blob_releases=releases, required=required,
    )


def check_recorded(request: AppendRequest, recorded: Sequence[StoredEvent]) -> None:
    """An import's events must chain exactly as recorded onto the stream's head."""
    for pending, stored in zip(request.events, recorded, strict=True):
        if (pending.version, pending.prev_hash) != (stored.version, stored.prev_hash):
            raise VersionConflict(request.stream_id, recorded[0].version - 1,
                                  request.events[0].version - 1)
        if pending.hash != stored.hash:
            raise InvalidInput("events", f"stream {request.stream_id!r} version "
                                         f"{stored.version} does not hash to its recorded hash")


def stored_events(request: AppendRequest, positions: list[int]) -> list[StoredEvent]:
    """The events of a committed request as the storage now holds them."""
    return [
        StoredEvent(
            position=position, event_id=pending.event_id, tenant_id=request.tenant_id,
            stream_id=request.stream_id, version=pending.version,
            recorded_at=pending.recorded_at, type=pending.type, data=pending.data,
            prev_hash=pending.prev_hash, hash=pending.hash, actor=pending.actor,
            signature=pending.signature,
        )
        for pending, position in zip(request.events, positions, strict=True)
    ]


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (≥ 1) of an append that lost a version race:
    full jitter over an exponentially growing cap, so writers that collided spread out."""
    return random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2 ** attempt))


def _raise_conflict(stream_id: str, expected: int | ExpectedVersion, head: Head | None) -> None:
    actual = version(head)
    if actual != expected:
        shown: int | str = "no stream" if expected == 0 else expected  # type: ignore[assignment]
        logger.info("conflicted", stream=stream_id, expected=shown, actual=actual)
        raise VersionConflict(stream_id, shown, actual)


# -- checking what callers pass ---------------------------------------------------------------


def check_expected(expected: object) -> int | ExpectedVersion:
    """``ANY``, or the exact version (``NO_STREAM`` is 0) an append expects."""
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


def check_releases(release: Mapping[bytes, int] | None) -> dict[bytes, int]:
    """Blob references to drop, by digest."""
    releases = dict(release or {})
    for digest, count in releases.items():
        check_digest("release", digest)
        check_positive_limit("release count", count)
    return releases


def check_required(require: Sequence[RowRequired], tenant_id: str) -> tuple[RowRequired, ...]:
    """View rows an append requires: each of a view table, naming the append's own tenant
    (a requirement never asks about another tenant's rows)."""
    for required in require:
        if not isinstance(required, RowRequired) or required.table not in view_metadata.tables:
            raise InvalidInput("require", f"must name rows of a view table, not {required!r}"
                               [:200])
        if required.where.get("tenant_id") != tenant_id:
            raise InvalidInput("require", f"must name rows of tenant {tenant_id!r} "
                               "(where tenant_id=...)"[:200])
    return tuple(require)


def check_digest(field: str, digest: object) -> bytes:
    """A 32-byte SHA-256 digest."""
    if not isinstance(digest, bytes) or len(digest) != 32:
        raise InvalidInput(field, f"must be a 32-byte SHA-256 digest, not {digest!r}"[:200])
    return digest
