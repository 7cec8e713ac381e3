"""`RetentionStore` (``log.retention``): legal holds, and retention passes that purge what
a policy lets go and nothing a hold, an open interrupt batch or an unresolved effect needs.

Decisions made here:

- **Holds and passes live on the tenant's stream ``retention``** (`eventlog.events.retention`):
  a hold or release is one event appended fenced on that stream's version; the standing
  holds are the fold of the stream. A subject is a session id or a thread id, or the
  ``subject=`` records name (a customer id shared by many sessions: `CheckpointCreated.subject`):
  a hold on it keeps whole the session and the thread of that id and every session and
  thread a record of which names it.
- **A pass purges in bounded batches, one transaction each**: at most ``batch_size``
  checkpoint records a batch, the tombstones of its sessions and threads appended in ONE
  `EventLog.append_batch` with a `RetentionPurged` on the retention stream, each stream
  fenced on the version its decision read. A create or put that commits meanwhile, or a
  hold placed meanwhile, makes the batch conflict: the pass decides again, never purging
  what it did not see. A pass never holds a stream on its first try; a stream whose
  writers beat it twice is decided and appended alone holding it (one short
  transaction, as a delete does), and after `STREAM_TRIES` lost races it is left for the
  next pass (reported ``skipped``).
- **Holds come from signed events only** (`EventLog.signed`): the retention stream is read
  with every event's chain link and writer signature checked, so an event the writer key
  did not sign (a forged ``legal_hold_released``) makes the hold list, a hold, a release
  and a pass refuse with `ForgedEvent` (exit status 1 in the CLI) rather than purge on its
  say-so. Refused, not skipped: a log with a forged row needs someone to look at it, and
  a pass that went on would still be deciding from a stream the writer did not write.
- **Holds by subject too**: when the tenant has holds, a stream about to lose records
  is also checked against the subjects its own checked events name (a record's
  ``subject``; the tenant's session and thread streams scanned at a pass's start), so a
  ``subject`` column the DBA cleared frees nothing.
- **Open batches come from their events too**: which interrupt batches are open (so keep
  their session or thread whole) is folded from the batch streams' checked events
  (`SignedReads.read_streams`, one scan of the tenant's ``interrupt-batch:`` key range),
  never from the ``interrupt_batches`` view, whose rows the database administrator can
  set to ``expired``.
- **Kept whole**: a session or thread under legal hold (by its id, or by a subject one
  of its records names: read with the rows the plan decides from, after the version
  its append is fenced on, so a record naming a held subject that commits meanwhile
  makes the append conflict), or named by an interrupt batch
  that is open (pending, claimed, dispatching its effect, or with an effect whose
  outcome is unknown: `OPEN_BATCH_STATES`), whatever the policy says.
- **Blobs** are released by reference: a blob another retained record (of any session or
  thread of the tenant) references keeps its reference and stays stored.
- **Each pass ends with a `RetentionApplied`** naming the policy, the pass's time (the
  injected clock), the counts, what was kept and why, and the subjects none of whose
  records remain (``expired_subjects``: what erasure with a keyring is for, see
  `RetentionStore.apply`'s ``erase``). A dry run decides the same and appends nothing.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from eventlog._logging import get_logger
from eventlog.checkpoints.removal import REMOVAL_TIMEOUT_S, StreamRemoval, backoff_delay
from eventlog.checkpoints.store import CheckpointStore
from eventlog.checkpoints.threads import ThreadRemoval
from eventlog.clock import read_clock
from eventlog.errors import InvalidInput, VersionConflict
from eventlog.events import Event
from eventlog.events.checkpoints import SESSION_STREAM_PREFIX, CheckpointCreated
from eventlog.events.interrupts import BATCH_STREAM_PREFIX
from eventlog.events.retention import (
    RETENTION_STREAM,
    LegalHoldPlaced,
    LegalHoldReleased,
    PurgedStream,
    RetentionApplied,
    RetentionPurged,
)
from eventlog.events.threads import THREAD_STREAM_PREFIX, ThreadCheckpointPut
from eventlog.ids import uuid7
from eventlog.log import EventLog
from eventlog.log.fencing import Retries, decide_fenced
from eventlog.records import StreamAppend
from eventlog.retention import decisions as decide
from eventlog.retention.decisions import LegalHold, RetentionPolicy
from eventlog.validation import check_id, check_positive_limit
from projections.checkpoints import CHECKPOINTS, SESSIONS
from projections.interrupts import batch_state
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS

logger = get_logger(__name__)

DEFAULT_BATCH_SIZE = 500
"""Checkpoint records one batch of a pass purges at most (one transaction)."""
MAX_BATCH_STREAMS = 50
"""Sessions and threads one batch names at most."""
BATCH_PAUSE_S = 0.02
"""How long a pass waits after each batch it commits, so that writers queued behind it
(every writer of a SQLite file, whose busy handler backs off while transactions follow
one another) get their turn between two batches."""
STREAM_TRIES = 8
"""Lost races after which a pass leaves a stream to the next pass."""
_HOLD_RETRIES = Retries(seconds=REMOVAL_TIMEOUT_S, backoff=backoff_delay)
"""A hold or release decided again after a pass's batch (or another hold) moved the
retention stream: as a removal waits, by time."""
_PAGE = 500
_MAX_REASON = 1000

_NAMING_TAGS = frozenset(kind.__struct_config__.tag
                         for kind in (CheckpointCreated, ThreadCheckpointPut))
"""The tags of the events that name a record's subject (decoded only these)."""


class Erase(Protocol):
    """What a pass calls for each fully expired subject: ``log.erase`` has this shape."""

    def __call__(self, tenant_id: str, subject: str, *, reason: str) -> Awaitable[Any]: ...


@dataclass(frozen=True, slots=True)
class PurgedRecords:
    """What a pass purged (or, dry, would purge) from one session or thread."""

    kind: str
    """``session`` or ``thread``."""
    id: str
    checkpoints: builtins.list[str]
    emptied: bool


@dataclass(slots=True)
class RetentionReport:
    """What a retention pass did (``dry_run``: would do) for one tenant."""

    tenant_id: str
    pass_id: str
    policy: RetentionPolicy
    now: str
    dry_run: bool
    purged: builtins.list[PurgedRecords] = field(default_factory=list)
    released: int = 0
    blobs_purged: int = 0
    batches: int = 0
    held: builtins.list[str] = field(default_factory=list)
    open_batches: builtins.list[str] = field(default_factory=list)
    skipped: builtins.list[str] = field(default_factory=list)
    expired_subjects: builtins.list[str] = field(default_factory=list)
    erased: builtins.list[str] = field(default_factory=list)
    position: int | None = None
    """The position of the pass's `RetentionApplied` (None on a dry run)."""
    longest_batch_s: float = 0.0
    """The longest a batch's append took (its transaction, and the fold of each released
    stream's references before it), in seconds: how long a writer of a stream the batch
    names can wait on it."""

    @property
    def checkpoints(self) -> int:
        """Checkpoint records purged, in all."""
        return sum(len(item.checkpoints) for item in self.purged)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (``--json``)."""
        return {
            "tenant": self.tenant_id, "pass_id": self.pass_id, "dry_run": self.dry_run,
            "policy": {"older_than_days": self.policy.rule.older_than_days,
                       "keep_latest": self.policy.keep_latest},
            "now": self.now, "checkpoints": self.checkpoints,
            "sessions": _count(self.purged, "session"),
            "threads": _count(self.purged, "thread"),
            "purged": [{"kind": item.kind, "id": item.id, "checkpoints": item.checkpoints,
                        "emptied": item.emptied} for item in self.purged],
            "released": self.released, "blobs_purged": self.blobs_purged,
            "batches": self.batches, "held": self.held, "open_batches": self.open_batches,
            "skipped": self.skipped, "expired_subjects": self.expired_subjects,
            "erased": self.erased, "position": self.position,
            "longest_batch_s": round(self.longest_batch_s, 4),
        }


@dataclass(frozen=True, slots=True)
class _Target:
    kind: str
    id: str


@dataclass(slots=True)
class _Planned:
    """A plan and the subjects its rows name (besides the target's own id)."""

    plan: StreamRemoval | None
    subjects: set[str]


@dataclass(slots=True)
class _Holds:
    version: int
    holds: dict[str, LegalHold]


class RetentionStore:
    """Legal holds and retention passes over one log; see the module docstring."""

    def __init__(self, log: EventLog, checkpoints: CheckpointStore) -> None:
        self._log = log
        self._checkpoints = checkpoints
        self._threads = checkpoints.threads

    # -- legal holds ---------------------------------------------------------------------

    async def hold(self, tenant_id: str, subject: str, *, reason: str = "") -> LegalHold:
        """Put ``subject`` under legal hold; return the hold. It keeps whole the session
        and the thread of that id and every session and thread whose records name it as
        their ``subject`` (`CheckpointRecord.subject`), including records written after
        the hold. A subject already held keeps its hold (nothing appended)."""
        check_id("tenant_id", tenant_id)
        check_id("subject", subject)
        reason = _check_reason(reason)

        async def once(_attempt: int) -> LegalHold:
            state = await self._holds(tenant_id)
            if subject in state.holds:
                return state.holds[subject]
            result = await self._log.append(
                tenant_id, RETENTION_STREAM, [LegalHoldPlaced(subject=subject, reason=reason)],
                expected_version=state.version)
            logger.info("hold_placed", tenant=tenant_id, subject=subject)
            return LegalHold(subject, reason, result.recorded_at, result.positions[0])

        return await decide_fenced(once, _HOLD_RETRIES)

    async def release(self, tenant_id: str, subject: str, *, reason: str = "") -> bool:
        """Release ``subject``'s legal hold; False (nothing appended) when it has none."""
        check_id("tenant_id", tenant_id)
        check_id("subject", subject)
        reason = _check_reason(reason)

        async def once(_attempt: int) -> bool:
            state = await self._holds(tenant_id)
            if subject not in state.holds:
                return False
            await self._log.append(
                tenant_id, RETENTION_STREAM, [LegalHoldReleased(subject=subject, reason=reason)],
                expected_version=state.version)
            logger.info("hold_released", tenant=tenant_id, subject=subject)
            return True

        return await decide_fenced(once, _HOLD_RETRIES)

    async def holds(self, tenant_id: str) -> builtins.list[LegalHold]:
        """The tenant's standing legal holds, by subject."""
        check_id("tenant_id", tenant_id)
        state = await self._holds(tenant_id)
        return [state.holds[subject] for subject in sorted(state.holds)]

    async def _holds(self, tenant_id: str) -> _Holds:
        """The holds the tenant's retention stream folds to, read through the log's checked
        read side: an event there the writer key did not sign (a release the database
        administrator inserted, however well chained) raises `ForgedEvent`, and the hold
        list, a hold, a release and a pass are all refused rather than decided from it."""
        version = 0
        events: builtins.list[tuple[Event, Any, int]] = []
        async for recorded in self._log.signed.read_stream(tenant_id, RETENTION_STREAM):
            version = recorded.version
            if isinstance(recorded.event, LegalHoldPlaced | LegalHoldReleased):
                events.append((recorded.event, recorded.recorded_at, recorded.position))
        return _Holds(version, decide.fold_holds(events))

    # -- retention passes ----------------------------------------------------------------

    async def apply(
        self, tenant_id: str, *, older_than: Any = None, keep_latest: int | None = None,
        dry_run: bool = False, batch_size: int = DEFAULT_BATCH_SIZE,
        erase: Erase | None = None,
    ) -> RetentionReport:
        """Apply a retention policy to one tenant's sessions and threads; see the module
        docstring. ``older_than`` is days (a number) or a `timedelta`; ``keep_latest``
        keeps that many latest records per session and per namespace of a thread; given
        both, a record goes only when both let it go. ``dry_run`` decides the same and
        writes nothing. ``erase`` (by default the log's own `EventLog.erase` when it
        has a keyring, else none), is awaited as ``erase(tenant_id, subject,
        reason=…)`` (the reason names the pass) for each subject in the report's
        ``expired_subjects`` after the pass is recorded."""
        check_id("tenant_id", tenant_id)
        policy = decide.check_policy(older_than, keep_latest)
        check_positive_limit("batch_size", batch_size, maximum=10_000)
        if not isinstance(dry_run, bool):
            raise InvalidInput("dry_run", f"must be True or False, not {dry_run!r}"[:200])
        now = read_clock(self._log.clock)
        run = _Pass(self, tenant_id, policy, decide.cutoff_of(policy, now), dry_run,
                    batch_size, RetentionReport(tenant_id, str(uuid7()), policy,
                                                now.isoformat(), dry_run))
        await run.run()
        report = run.report
        report.expired_subjects = await self._expired(tenant_id, report, run.named)
        if erase is None and self._log.sealer is not None:
            erase = self._log.erase  # an encrypted log: a subject left with nothing goes
        if not dry_run:
            report.position = (await self._log.append(
                tenant_id, RETENTION_STREAM, [_applied(report)])).positions[0]
            if erase is not None:
                reason = f"retention pass {report.pass_id}: no record remains"
                for subject in report.expired_subjects:
                    await erase(tenant_id, subject, reason=reason)
                    report.erased.append(subject)
        logger.info("retention_applied", tenant=tenant_id, dry_run=dry_run,
                    checkpoints=report.checkpoints, batches=report.batches)
        return report

    async def _expired(self, tenant_id: str, report: RetentionReport,
                       named: dict[tuple[str, str], set[str]]) -> builtins.list[str]:
        """Of the subjects of what this pass emptied (the ids, and the subjects their
        records named), those no remaining record carries: neither a session or thread of
        that id nor a record naming it (a dry run: none the plan does not empty)."""
        emptied = {(item.kind, item.id) for item in report.purged if item.emptied}
        candidates = {subject for key in emptied for subject in (key[1], *named.get(key, ()))}
        gone = emptied if report.dry_run else set()
        return [subject for subject in sorted(candidates)
                if not await self._carriers(tenant_id, subject) - gone]

    async def _carriers(self, tenant_id: str, subject: str) -> set[tuple[str, str]]:
        """The sessions and threads that carry ``subject``: of that id, or with a record
        naming it."""
        found: set[tuple[str, str]] = set()
        for kind, table, column in (("session", CHECKPOINTS, "session_id"),
                                    ("thread", THREAD_CHECKPOINTS, "thread_id")):
            tenant = {"tenant_id": tenant_id}
            if await self._log.query(ViewQuery(table, {**tenant, column: subject},
                                               columns=(column,), limit=1)):
                found.add((kind, subject))
            rows = await self._log.query(ViewQuery(table, {**tenant, "subject": subject},
                                                   columns=(column,)))
            found.update((kind, row[column]) for row in rows)
        return found

    async def _plan(self, target: _Target, tenant_id: str, policy: RetentionPolicy,
                   cutoff: Any, limit: int | None) -> _Planned:
        """One session's or thread's tombstone under the policy (not appended), and the
        subjects the rows it decided from name."""
        subjects: set[str] = set()

        def named(rows: builtins.list[dict[str, Any]]) -> builtins.list[dict[str, Any]]:
            subjects.update(row["subject"] for row in rows if row["subject"] is not None)
            return rows

        plan: StreamRemoval | None
        if target.kind == "session":
            plan = await self._checkpoints.removal_plan(
                tenant_id, target.id,
                lambda rows: decide.session_versions(named(rows), policy, cutoff, limit),
                "retention")
        else:
            plan = await self._threads.removal_plan(
                tenant_id, target.id,
                lambda rows: decide.thread_keys(named(rows), policy, cutoff, limit),
                ThreadRemoval(reason="retention", keep=policy.keep_latest), whole=True)
        return _Planned(plan, subjects)

    async def _event_subjects(self, tenant_id: str) -> dict[str, set[str]]:
        """The subjects the records of each of the tenant's session and thread streams
        name, by stream (streams naming none left out), from their events read through
        the checked read side: not from the views' ``subject`` column, which the database
        administrator can clear to free a held subject's records. One scan of each key
        range, read only when the tenant has holds."""
        found: dict[str, set[str]] = {}
        for prefix in (SESSION_STREAM_PREFIX, THREAD_STREAM_PREFIX):
            async for stored in self._log.signed.read_streams(tenant_id, prefix):
                if stored.type not in _NAMING_TAGS:
                    continue
                event = self._log.decode(stored).event
                if isinstance(event, CheckpointCreated | ThreadCheckpointPut) and event.subject:
                    found.setdefault(stored.stream_id, set()).add(event.subject)
        return found

    async def _targets(self, tenant_id: str) -> AsyncIterator[_Target]:
        """The tenant's sessions (by id), then its threads (by id), a page at a time."""
        after: tuple[Any, ...] | None = None
        while True:
            rows = await self._log.query(ViewQuery(
                SESSIONS, {"tenant_id": tenant_id}, order_by=("session_id",), after=after,
                limit=_PAGE, columns=("session_id",)))
            for row in rows:
                yield _Target("session", row["session_id"])
            if len(rows) < _PAGE:
                break
            after = (rows[-1]["session_id"],)
        after, last = None, None
        while True:
            rows = await self._log.query(ViewQuery(
                THREAD_CHECKPOINTS, {"tenant_id": tenant_id},
                order_by=("thread_id", "namespace", "checkpoint_id"), after=after,
                limit=_PAGE, columns=("thread_id", "namespace", "checkpoint_id")))
            for row in rows:
                if row["thread_id"] != last:
                    last = row["thread_id"]
                    yield _Target("thread", last)
            if len(rows) < _PAGE:
                break
            after = (rows[-1]["thread_id"], rows[-1]["namespace"], rows[-1]["checkpoint_id"])

    async def _open_subjects(self, tenant_id: str) -> set[str]:
        """The thread ids (sessions or threads) named by the tenant's open batches,
        decided from the batches' own events read through the checked read side (one
        scan of the tenant's batch streams), never from ``interrupt_batches``: a row the
        database administrator set to ``expired`` must not let a pass purge what a
        pending batch still needs, and a forged batch event refuses the pass
        (`ForgedEvent`)."""
        found: set[str] = set()
        stream: str | None = None
        events: builtins.list[Event] = []
        async for stored in self._log.signed.read_streams(tenant_id, BATCH_STREAM_PREFIX):
            if stored.stream_id != stream:
                _open_batch(events, found)
                stream, events = stored.stream_id, []
            events.append(self._log.decode(stored).event)
        _open_batch(events, found)
        return found

    @property
    def log(self) -> EventLog:
        """The log the store appends to."""
        return self._log


class _Pass:
    """One pass over one tenant: decides each stream, batches, appends, reports."""

    def __init__(self, store: RetentionStore, tenant_id: str, policy: RetentionPolicy,
                 cutoff: Any, dry_run: bool, batch_size: int, report: RetentionReport) -> None:
        self.store, self.log, self.tenant = store, store.log, tenant_id
        self.policy, self.cutoff, self.dry_run = policy, cutoff, dry_run
        self.batch_size, self.report = batch_size, report
        self.batch: builtins.list[tuple[_Target, StreamRemoval]] = []
        self.holds = _Holds(0, {})
        self.open: set[str] = set()
        self.released: Counter[bytes] = Counter()
        self.subjects: dict[str, set[str]] | None = None
        """Each stream's subjects as its events name them (`RetentionStore.
        _event_subjects`), when holds stood at the pass's start."""
        self.named: dict[tuple[str, str], set[str]] = {}
        """The subjects each planned stream's records name (for ``expired_subjects``)."""

    async def run(self) -> None:
        self.holds = await self.store._holds(self.tenant)
        self.open = await self.store._open_subjects(self.tenant)
        if self.holds.holds:  # read here, never inside a held stream's transaction
            self.subjects = await self.store._event_subjects(self.tenant)
        async for target in self.store._targets(self.tenant):
            await self._take(target)
        await self._flush()
        if not self.released:
            return
        if self.dry_run:  # the blobs whose every reference the plan gives up
            refs = await self.log.blob_refs(self.tenant)
            self.report.blobs_purged = sum(
                1 for digest, count in self.released.items() if refs.get(digest, 0) <= count)
        else:
            stored = await _stored(self.log, self.tenant, builtins.list(self.released))
            self.report.blobs_purged = len(self.released) - len(stored)

    async def _take(self, target: _Target) -> None:
        """Plan the stream (in parts of what a batch holds) into batches."""
        while True:
            room = None if self.dry_run else self.batch_size - self._size()
            plan = await self._planned(target, room)
            if plan is None:
                return
            self.batch.append((target, plan))
            if room is None or len(plan.checkpoints) < room:
                if len(self.batch) >= MAX_BATCH_STREAMS:
                    await self._flush()
                return
            await self._flush()  # the batch is full: the stream may have more

    async def _planned(self, target: _Target, limit: int | None) -> StreamRemoval | None:
        """The stream's plan, or None when nothing goes or it is kept whole (noted)."""
        planned = await self.store._plan(target, self.tenant, self.policy, self.cutoff, limit)
        plan = planned.plan
        if plan is None:
            return None
        self.named.setdefault((target.kind, target.id), set()).update(planned.subjects)
        named = {target.id, *planned.subjects, *self._event_subjects(target)}
        if not self.holds.holds.keys().isdisjoint(named):
            _note(self.report.held, target.id)
            return None
        if target.id in self.open:
            _note(self.report.open_batches, target.id)
            return None
        return plan

    def _event_subjects(self, target: _Target) -> set[str]:
        """The subjects the target's records name as its checked events say (read at the
        pass's start when holds stand, or once a hold placed meanwhile is seen)."""
        return set() if self.subjects is None else self.subjects.get(_stream_of(target), set())

    def _size(self) -> int:
        return sum(len(plan.checkpoints) for _, plan in self.batch)

    async def _flush(self) -> None:
        batch, self.batch = self.batch, []
        if not batch:
            return
        if self.dry_run:
            self._record(batch)
            return
        try:
            await self._append(batch)
        except VersionConflict:
            # Someone wrote meanwhile: each stream again on its own, deciding afresh.
            for target, _ in batch:
                await self._alone(target)
            return
        self._record(batch)
        await asyncio.sleep(BATCH_PAUSE_S)

    async def _alone(self, target: _Target) -> None:
        """One stream's part decided again and appended with the retention event, held
        after two lost races in a row, left to the next pass after `STREAM_TRIES`."""
        stream = _stream_of(target)
        lost = 0
        while lost < STREAM_TRIES:
            if lost:
                await asyncio.sleep(backoff_delay(lost))
                self.holds = await self.store._holds(self.tenant)
                if self.holds.holds and self.subjects is None:  # a hold placed meanwhile
                    self.subjects = await self.store._event_subjects(self.tenant)
            hold: AbstractAsyncContextManager[None] = (
                self.log.hold_stream(self.tenant, stream) if lost >= 2 else nullcontext())
            try:
                async with hold:
                    plan = await self._planned(target, self.batch_size)
                    if plan is None:
                        return
                    await self._append([(target, plan)])
            except VersionConflict:
                lost += 1
                continue
            self._record([(target, plan)])
            await asyncio.sleep(BATCH_PAUSE_S)  # outside the hold: writers go first
            if len(plan.checkpoints) < self.batch_size:
                return
            lost = 0
        _note(self.report.skipped, target.id)

    async def _append(self, batch: builtins.list[tuple[_Target, StreamRemoval]]) -> None:
        purged = RetentionPurged(
            pass_id=self.report.pass_id, policy=self.policy.rule,
            streams=[PurgedStream(kind=target.kind, id=target.id,
                                  checkpoints=plan.checkpoints, emptied=plan.emptied)
                     for target, plan in batch],
            released=sum(sum(plan.releases.values()) for _, plan in batch))
        appends = [StreamAppend(tenant_id=self.tenant, stream_id=plan.stream_id,
                                events=[plan.event], expected_version=plan.expected_version,
                                release=plan.releases) for _, plan in batch]
        appends.append(StreamAppend(tenant_id=self.tenant, stream_id=RETENTION_STREAM,
                                    events=[purged], expected_version=self.holds.version))
        started = time.monotonic()
        try:
            results = await self.log.append_batch(appends)
        finally:
            self.report.longest_batch_s = max(self.report.longest_batch_s,
                                              time.monotonic() - started)
        self.holds.version = results[-1].version

    def _record(self, batch: builtins.list[tuple[_Target, StreamRemoval]]) -> None:
        if not self.dry_run:
            self.report.batches += 1
        for target, plan in batch:
            self.report.purged.append(PurgedRecords(target.kind, target.id, plan.checkpoints,
                                                    plan.emptied))
            self.report.released += sum(plan.releases.values())
            self.released.update(plan.releases)


def _open_batch(events: builtins.list[Event], found: set[str]) -> None:
    """Add the thread of the batch whose events these are to ``found`` if it is open."""
    state = batch_state(events)
    if state is not None and state[1] in decide.OPEN_BATCH_STATES:
        found.add(state[0])


def _stream_of(target: _Target) -> str:
    prefix = SESSION_STREAM_PREFIX if target.kind == "session" else THREAD_STREAM_PREFIX
    return prefix + target.id


def _note(names: builtins.list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def _count(purged: builtins.list[PurgedRecords], kind: str) -> int:
    return len({item.id for item in purged if item.kind == kind})


def _check_reason(reason: Any) -> str:
    if not isinstance(reason, str):
        raise InvalidInput("reason", f"must be text, not {reason!r}"[:200])
    if len(reason) > _MAX_REASON:
        raise InvalidInput("reason", f"must be at most {_MAX_REASON} characters")
    return reason


async def _stored(log: EventLog, tenant_id: str, digests: builtins.list[bytes]) -> set[bytes]:
    found: set[bytes] = set()
    for start in range(0, len(digests), _PAGE):
        found.update(await log.get_blobs(tenant_id, digests[start:start + _PAGE]))
    return found


def _applied(report: RetentionReport) -> RetentionApplied:
    return RetentionApplied(
        pass_id=report.pass_id, policy=report.policy.rule, now=report.now,
        checkpoints=report.checkpoints, sessions=_count(report.purged, "session"),
        threads=_count(report.purged, "thread"), batches=report.batches,
        released=report.released, blobs_purged=report.blobs_purged, held=report.held,
        open_batches=report.open_batches, skipped=report.skipped,
        expired_subjects=report.expired_subjects)

