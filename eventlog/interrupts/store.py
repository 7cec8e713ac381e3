"""`InterruptStore`: the thin I/O around `eventlog.interrupts.decisions`.

Every operation changes a batch the one fenced way (`Batches.fenced`: read the row,
decide, append at most one event fenced on the row's version, decide again after a lost
race). A decision of "nothing" appends nothing: stale claims and captures are harmless
and say so in their return value, never by raising.

The tenant is ``tenant_id`` in every result, as in the rest of the library; the methods
that the seed API (Hashbrown's ``PostgresInterruptStore``) gives a ``scope`` parameter
keep that name for it.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from datetime import datetime

from eventlog._logging import get_logger
from eventlog.checkpoints.store import CheckpointStore
from eventlog.errors import InvalidInput
from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.interrupts import decisions, inputs, spans
from eventlog.interrupts.admin import BatchAdmin
from eventlog.interrupts.batches import Batches
from eventlog.interrupts.decisions import BatchView
from eventlog.interrupts.models import (
    OPEN_STATES,
    BatchInspection,
    BatchPage,
    CaptureHandle,
    ClaimRejection,
    ClaimResult,
    CleanupResult,
    Finish,
    Interrupt,
    InterruptClaim,
    InterruptOptions,
    Operation,
    OperationRegistry,
    PendingBatch,
    ReconcileResult,
    Reconciliation,
    Recovery,
    ResumeInput,
)
from eventlog.log import EventLog
from eventlog.records import NO_STREAM
from eventlog.telemetry import traced
from eventlog.validation import check_id
from projections.interrupts import BATCHES
from projections.query import In, ViewQuery

logger = get_logger(__name__)


class InterruptStore:
    """Human-in-the-loop interrupt batches over an `EventLog` (``log.interrupts``).

    ``options`` are `InterruptOptions` (defaults documented there). ``operations`` are
    the operations this process trusts to resume (an `OperationRegistry` or any iterable
    of `Operation`); None trusts every operation. Both are usually given to
    ``open_log(url, interrupt_options=..., operations=...)``. ``checkpoints`` is the
    checkpoint store ``recover`` reads a thread's latest checkpoint from (`open_log`
    gives its own; by default one over ``log``).
    """

    def __init__(
        self,
        log: EventLog,
        options: InterruptOptions | None = None,
        operations: OperationRegistry | Iterable[Operation] | None = None,
        *,
        checkpoints: CheckpointStore | None = None,
    ) -> None:
        self.log = log
        self.checkpoints = checkpoints if checkpoints is not None else CheckpointStore(log)
        if operations is not None and not isinstance(operations, OperationRegistry):
            operations = OperationRegistry(operations)
        self.batches = Batches(log, options if options is not None else InterruptOptions(),
                               operations)
        self.admin = BatchAdmin(self.batches, self.checkpoints)

    @property
    def options(self) -> InterruptOptions:
        """The store's `InterruptOptions`."""
        return self.batches.options

    @property
    def operations(self) -> OperationRegistry | None:
        """The operations this process trusts to resume (None: every operation)."""
        return self.batches.operations

    # -- creating and claiming -------------------------------------------------------------

    @traced("eventlog.interrupts.create", spans.created, spans.batch_created)
    async def create(
        self,
        scope: str,
        thread_id: str,
        interrupts: list[Interrupt] | tuple[Interrupt, ...],
        checkpoint_id: str,
        *,
        operation: Operation | tuple[str, str],
    ) -> PendingBatch:
        """Persist a new pending batch and return it; emit the batch only afterwards.

        ``interrupts`` must be non-empty with distinct ids. The answer deadline is the
        earliest ``expires_at`` (the approval TTL for interrupts without one). Raises
        `CapacityExceeded` when the tenant (``scope``) already has ``capacity`` open
        batches (counted from the view, so concurrent creates in one tenant may overshoot
        it by the number of creators racing), and `InvalidInput` for an untrusted
        operation.
        """
        tenant_id = check_id("scope", scope)
        inputs.check_thread_id(thread_id)
        check_id("checkpoint_id", checkpoint_id)
        checked_operation = inputs.check_operation(operation)
        now = self.batches.now()
        checked = inputs.check_interrupts(interrupts, self.options, now)
        if not self.batches.trusts(checked_operation):
            raise InvalidInput("operation", "is not in this store's trusted operations")
        await self._check_capacity(tenant_id)
        batch_id = str(uuid.uuid4())
        deadline = decisions.approval_deadline(checked, now, self.options.approval_ttl)
        event = ev.BatchCreated(
            batch_id=batch_id, thread_id=thread_id, checkpoint_id=checkpoint_id,
            operation_name=checked_operation.name, operation_version=checked_operation.version,
            interrupts=checked, approval_expires_at=deadline,
        )
        await self.log.append(tenant_id, ev.batch_stream(batch_id), [event],
                              expected_version=NO_STREAM)
        logger.info("batch_created", tenant=tenant_id, batch_id=batch_id, count=len(checked))
        return PendingBatch(
            batch_id=batch_id, tenant_id=tenant_id, thread_id=thread_id,
            checkpoint_id=checkpoint_id, operation=checked_operation, interrupts=checked,
            approval_expires_at=deadline,
        )

    @traced("eventlog.interrupts.claim", spans.claiming, spans.claim_decided)
    async def try_claim(self, scope: str, resume_input: ResumeInput) -> ClaimResult:
        """Claim a batch with a complete answer: a fresh token, a higher generation, a lease.

        Returns ``ClaimResult(claim, None)`` or ``ClaimResult(None, reason)``. Another
        tenant's batch (``scope`` is the tenant) is ``not_found``. A replay while the
        claim is live is ``already_claimed`` and mints nothing.
        """
        tenant_id = check_id("scope", scope)
        resume = inputs.check_resume_input(resume_input, self.options)
        token = secrets.token_urlsafe(32)

        def decide(view: BatchView | None, now: datetime) -> tuple[Event | None, ClaimResult]:
            trusted = view is not None and self.batches.trusts(view.operation)
            decided = decisions.decide_claim(view, resume, now, trusted=trusted, token=token,
                                             lease=self.options.preparation_lease)
            if isinstance(decided, ClaimRejection):
                problem = (decisions.response_problem(view.interrupts, resume.responses)
                           if view is not None else None)
                detail = problem[1] if problem is not None and problem[0] is decided else None
                return None, ClaimResult(None, decided, detail)
            claim = InterruptClaim(tenant_id=tenant_id, batch_id=resume.batch_id,
                                   generation=decided.generation,
                                   expires_at=decided.lease_expires_at, token=token)
            return decided, ClaimResult(claim, None)

        result = await self.batches.fenced(tenant_id, resume.batch_id, decide)
        # Never the detail: it quotes the rejected answer (a value, personal on an
        # encrypted log); the caller gets it in the result.
        logger.info("claim_decided", tenant=tenant_id, batch_id=resume.batch_id,
                    claimed=result.claim is not None, reason=result.reason)
        return result

    # -- under a claim -----------------------------------------------------------------------

    @traced("eventlog.interrupts.start_capture", spans.under_claim)
    async def start_capture(self, claim: InterruptClaim) -> CaptureHandle | None:
        """A capture handle for the current claim (one per claim), else None."""
        claim = inputs.check_claim(claim)
        capture_id = uuid.uuid4().hex

        def decide(view: BatchView | None, now: datetime) -> tuple[Event | None, bool]:
            event = decisions.decide_start_capture(view, claim.token, claim.generation, now,
                                                   capture_id)
            return event, event is not None

        if not await self.batches.fenced(claim.tenant_id, claim.batch_id, decide):
            return None
        return CaptureHandle(tenant_id=claim.tenant_id, batch_id=claim.batch_id,
                             generation=claim.generation, capture_id=capture_id,
                             token=claim.token)

    @traced("eventlog.interrupts.start_effect", spans.under_claim, spans.decided)
    async def try_start_effect(self, claim: InterruptClaim) -> bool:
        """Commit the irreversible dispatch marker; True only for the current, unexpired
        claim of a batch whose effect never started. Dispatch only after True."""
        claim = inputs.check_claim(claim)

        def decide(view: BatchView | None, now: datetime) -> tuple[Event | None, bool]:
            event = decisions.decide_effect(view, claim.token, claim.generation, now)
            return event, event is not None

        started = await self.batches.fenced(claim.tenant_id, claim.batch_id, decide)
        logger.info("effect_decided", tenant=claim.tenant_id, batch_id=claim.batch_id,
                    generation=claim.generation, started=started)
        return started

    @traced("eventlog.interrupts.complete_capture", spans.under_claim, spans.decided)
    async def complete_capture(
        self, handle: CaptureHandle, outcome: str, snapshot: str | None = None
    ) -> bool:
        """Record a running capture's terminal ``outcome`` (``completed``, ``failed``,
        ``cancelled``) and ``snapshot``; True only under the current claim and capture."""
        handle = inputs.check_handle(handle)
        checked_outcome = inputs.check_outcome(outcome)
        checked_snapshot = inputs.check_snapshot(snapshot, self.options)

        def decide(view: BatchView | None, now: datetime) -> tuple[Event | None, bool]:
            event = decisions.decide_complete_capture(
                view, handle.token, handle.generation, handle.capture_id, now,
                checked_outcome.value, checked_snapshot,
            )
            return event, event is not None

        return await self.batches.fenced(handle.tenant_id, handle.batch_id, decide)

    @traced("eventlog.interrupts.finish", spans.under_claim, spans.decided)
    async def finish(self, claim: InterruptClaim, finish: Finish) -> bool:
        """`Finish.FINALIZE` ends the batch; `Finish.RELEASE` returns it to pending (only
        when no effect started). True when done; False for a stale or expired claim."""
        claim = inputs.check_claim(claim)
        if not isinstance(finish, Finish):
            raise InvalidInput("finish", "must be Finish.FINALIZE or Finish.RELEASE")
        release = finish is Finish.RELEASE

        def decide(view: BatchView | None, now: datetime) -> tuple[Event | None, bool]:
            event = decisions.decide_finish(view, claim.token, claim.generation, now, release)
            return event, event is not None

        done = await self.batches.fenced(claim.tenant_id, claim.batch_id, decide)
        logger.info("finish_decided", tenant=claim.tenant_id, batch_id=claim.batch_id,
                    finish=finish.value, done=done)
        return done

    # -- maintenance, reading, operators (see admin.py) ---------------------------------------

    async def cleanup(self, limit: int | None = None) -> CleanupResult:
        """One bounded maintenance pass over every tenant: at most ``limit`` batches per
        category (default ``cleanup_batch_size``). Never resolves an unresolved effect."""
        return await self.admin.cleanup(limit)

    async def list(
        self,
        scopes: Iterable[str],
        limit: int = 50,
        cursor: str | None = None,
        state: str | None = None,
    ) -> BatchPage:
        """A page of batches within ``scopes`` (the permitted tenants) in creation order,
        optionally by state."""
        return await self.admin.list(scopes, limit, cursor, state)

    async def inspect(
        self, scopes: Iterable[str], batch_id: str, limit: int = 50, cursor: str | None = None
    ) -> BatchInspection | None:
        """Safe metadata and a page of the audit trail; None outside ``scopes``."""
        return await self.admin.inspect(scopes, batch_id, limit, cursor)

    @traced("eventlog.interrupts.reconcile", spans.reconciling)
    async def reconcile(
        self, scopes: Iterable[str], batch_id: str, actor: str, reconciliation: Reconciliation
    ) -> ReconcileResult:
        """Record who (``actor``) decided what on which evidence; retire all authority."""
        return await self.admin.reconcile(scopes, batch_id, actor, reconciliation)

    @traced("eventlog.interrupts.recover", spans.recovering)
    async def recover(self, scope: str, thread_id: str) -> Recovery:
        """The thread's latest checkpoint and its newest open batch in the tenant
        (``scope``), claiming nothing."""
        return await self.admin.recover(scope, thread_id)

    async def _check_capacity(self, tenant_id: str) -> None:
        capacity = self.options.capacity
        rows = await self.log.query(ViewQuery(
            BATCHES,
            where={"tenant_id": tenant_id, "state": In(tuple(s.value for s in OPEN_STATES))},
            columns=("batch_id",), limit=capacity,
        ))
        if len(rows) >= capacity:
            raise inputs.CapacityExceeded(tenant_id, capacity)
