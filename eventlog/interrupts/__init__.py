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

The models load with the package; `InterruptStore` on first use (PEP 562,
`eventlog._lazy`): it imports the checkpoint store, the log, its storage and the
projections, SQLAlchemy with them, which naming an option or an operation
(``from eventlog import InterruptOptions, Operation``) never needs.
"""

from typing import TYPE_CHECKING

from eventlog._lazy import attach, deferred_names
from eventlog.errors import CapacityExceeded
from eventlog.events.interrupts import BATCH_EVENTS, batch_stream
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

if TYPE_CHECKING:  # the store, loaded on first use: `from MODULE import NAME as NAME`
    from eventlog.interrupts.store import InterruptStore as InterruptStore
else:
    __getattr__ = attach(globals(), deferred_names(__file__))

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
