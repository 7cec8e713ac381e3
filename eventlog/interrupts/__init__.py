"""Human-in-the-loop interrupt batches with fenced claims, leases, effects and reconciliation.

The approve-a-payment flow::

    async with open_log(url, operations=[Operation("payments", "1")]) as log:
        batch = await log.interrupts.create(
            "acme", "thread-1",
            [Interrupt(id="approve", reason="confirmation",
                       response_schema={"type": "object", "required": ["approved"]})],
            checkpoint_id, operation=Operation("payments", "1"),
        )
        # ... emit the batch to the client; later the person answers:
        result = await log.interrupts.try_claim("acme", ResumeInput(
            thread_id="thread-1", batch_id=batch.batch_id,
            responses=[Resume(interrupt_id="approve", status="resolved",
                              payload={"approved": True})]))
        if result.claim is not None and await log.interrupts.try_start_effect(result.claim):
            send_payment()                       # only after the marker is committed
            await log.interrupts.finish(result.claim, Finish.FINALIZE)

A worker that dies after ``try_start_effect`` leaves the batch ``unresolved`` once its
lease runs out: it is never claimable again, and an operator ends it with ``reconcile``.
"""

from eventlog.events.interrupts import BATCH_EVENTS, batch_stream
from eventlog.interrupts.inputs import CapacityExceeded
from eventlog.interrupts.models import (
    AuditEntry,
    BatchInspection,
    BatchPage,
    BatchState,
    BatchSummary,
    CaptureHandle,
    CaptureOutcome,
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
    ReconcileRejection,
    ReconcileResult,
    Reconciliation,
    Recovery,
    RecoveryDisposition,
    Resume,
    ResumeInput,
)
from eventlog.interrupts.store import InterruptStore

__all__ = [
    "BATCH_EVENTS",
    "AuditEntry",
    "BatchInspection",
    "BatchPage",
    "BatchState",
    "BatchSummary",
    "CapacityExceeded",
    "CaptureHandle",
    "CaptureOutcome",
    "ClaimRejection",
    "ClaimResult",
    "CleanupResult",
    "Finish",
    "Interrupt",
    "InterruptClaim",
    "InterruptOptions",
    "InterruptStore",
    "Operation",
    "OperationRegistry",
    "PendingBatch",
    "ReconcileRejection",
    "ReconcileResult",
    "Reconciliation",
    "Recovery",
    "RecoveryDisposition",
    "Resume",
    "ResumeInput",
    "batch_stream",
]
