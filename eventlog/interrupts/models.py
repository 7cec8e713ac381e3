"""The interrupt store's vocabulary: what callers pass in and what they get back.

Inputs that are also recorded in events (`Interrupt`, `Resume`, `Reconciliation`) are
msgspec Structs in the AG-UI shape; `Interrupt` and `Resume` are declared with the events
that carry them (`eventlog.events.interrupts`) and re-exported here. Handles that carry
authority (`InterruptClaim`, `CaptureHandle`) are server-local dataclasses whose ``repr``
never shows the token: never serialize them, never log them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec

from eventlog.checkpoints.records import CheckpointRecord
from eventlog.events.interrupts import Interrupt as Interrupt
from eventlog.events.interrupts import Resume as Resume

# -- inputs (AG-UI shapes) ---------------------------------------------------------------


class ResumeInput(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to a whole batch: one `Resume` per interrupt, on the batch's thread."""

    thread_id: str
    batch_id: str
    responses: tuple[Resume, ...] | list[Resume]


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """An operator's ruling on a batch whose outcome the store cannot know.

    ``resolution`` says what happened to the effect: ``effect_applied`` or
    ``effect_not_applied`` (only for a batch whose effect was started), or ``abandoned``.
    ``evidence`` says on what grounds (a JSON object, e.g. a payment provider's reference).
    ``expected_version``, when given, makes the ruling apply only to the batch exactly as
    the operator inspected it (its ``version``).
    """

    resolution: Literal["effect_applied", "effect_not_applied", "abandoned"]
    evidence: dict[str, Any]
    note: str | None = None
    expected_version: int | None = None


class Finish(enum.Enum):
    """How a claim holder ends its claim."""

    FINALIZE = "finalize"
    """The run resumed and completed: the batch is done."""
    RELEASE = "release"
    """Give the batch back to pending (only when no effect was started)."""


class CaptureOutcome(enum.StrEnum):
    """The terminal outcome a capture records (``running``/``abandoned`` are the store's)."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Operation:
    """The workflow a batch belongs to: its name and version (a deploy's identity)."""

    name: str
    version: str


class OperationRegistry:
    """The operations this process trusts to resume. ``None`` (no registry) trusts all."""

    def __init__(self, operations: Iterable[Operation | tuple[str, str]]) -> None:
        self._known = frozenset(
            op if isinstance(op, Operation) else Operation(*op) for op in operations
        )

    def trusts(self, name: str, version: str) -> bool:
        """Whether a batch bound to ``(name, version)`` may be resumed here."""
        return Operation(name, version) in self._known

    def __contains__(self, operation: object) -> bool:
        return operation in self._known


@dataclass(frozen=True, slots=True)
class InterruptOptions:
    """The interrupt store's knobs, with their defaults.

    - ``preparation_lease`` (5 minutes): how long a claim stays live. The holder must
      start its effect, complete its capture and finish within it; afterwards the lease
      may be taken over (no effect) or the batch becomes ``unresolved`` (effect started).
    - ``approval_ttl`` (24 hours): the answer deadline of an interrupt without
      ``expires_at``.
    - ``audit_retention`` (30 days): how long a finished batch stays in the views after
      its last change; the log keeps its events forever.
    - ``capacity`` (1000): open (not finished) batches allowed per tenant.
    - ``cleanup_batch_size`` (100): rows one `cleanup` pass handles per category.
    - ``max_interrupts`` (100): interrupts per batch.
    - ``max_payload_bytes`` (64 KiB): the largest encoded answer payload, response
      schema, evidence or capture snapshot.
    """

    preparation_lease: timedelta = timedelta(minutes=5)
    approval_ttl: timedelta = timedelta(hours=24)
    audit_retention: timedelta = timedelta(days=30)
    capacity: int = 1000
    cleanup_batch_size: int = 100
    max_interrupts: int = 100
    max_payload_bytes: int = 64 * 1024


# -- states and reasons --------------------------------------------------------------------


class BatchState(enum.StrEnum):
    """Where a batch stands. ``pending``/``claimed``/``effect_started``/``unresolved`` are
    open; ``finalized``/``expired``/``reconciled`` are terminal."""

    PENDING = "pending"
    CLAIMED = "claimed"
    EFFECT_STARTED = "effect_started"
    UNRESOLVED = "unresolved"
    FINALIZED = "finalized"
    EXPIRED = "expired"
    RECONCILED = "reconciled"


OPEN_STATES = (
    BatchState.PENDING, BatchState.CLAIMED, BatchState.EFFECT_STARTED, BatchState.UNRESOLVED
)
TERMINAL_STATES = (BatchState.FINALIZED, BatchState.EXPIRED, BatchState.RECONCILED)
CLAIM_STATES = (BatchState.CLAIMED, BatchState.EFFECT_STARTED)


class ClaimRejection(enum.StrEnum):
    """Why `InterruptStore.try_claim` minted no claim."""

    NOT_FOUND = "not_found"
    """No such batch in this tenant (also: another tenant's batch, or one retired)."""
    THREAD_MISMATCH = "thread_mismatch"
    UNTRUSTED_OPERATION = "untrusted_operation"
    FINISHED = "finished"
    UNRESOLVED_EFFECT = "unresolved_effect"
    ALREADY_CLAIMED = "already_claimed"
    EXPIRED = "expired"
    INCOMPLETE = "incomplete"
    UNKNOWN_INTERRUPT = "unknown_interrupt"
    DUPLICATE_RESPONSE = "duplicate_response"
    INVALID_PAYLOAD = "invalid_payload"


class ReconcileRejection(enum.StrEnum):
    """Why `InterruptStore.reconcile` recorded nothing."""

    NOT_FOUND = "not_found"
    FINISHED = "finished"
    NO_EFFECT = "no_effect"
    """``effect_applied``/``effect_not_applied`` for a batch whose effect never started."""
    CHANGED = "changed"
    """The batch is no longer at the reconciliation's ``expected_version``."""


class RecoveryDisposition(enum.StrEnum):
    """What `InterruptStore.recover` found for a thread."""

    NO_OPEN_BATCH = "no_open_batch"
    AWAITING_RESPONSE = "awaiting_response"
    IN_PROGRESS = "in_progress"
    UNRESOLVED = "unresolved"
    UNTRUSTED_OPERATION = "untrusted_operation"


# -- results -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PendingBatch:
    """A batch as created: persist first, then emit ``interrupts`` to the client."""

    batch_id: str
    tenant_id: str
    thread_id: str
    checkpoint_id: str
    operation: Operation
    interrupts: tuple[Interrupt, ...]
    approval_expires_at: datetime


@dataclass(frozen=True, slots=True)
class InterruptClaim:
    """The authority to resume a batch: server-local, never serialized, never logged."""

    tenant_id: str
    batch_id: str
    generation: int
    expires_at: datetime
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """``claim`` when claimed, else ``reason`` (exactly one of them is set). ``detail``
    says what exactly was wrong with a rejected answer (``invalid_payload``: which
    interrupt, which field and why; ``incomplete``, ``unknown_interrupt``,
    ``duplicate_response``: which interrupt); None otherwise."""

    claim: InterruptClaim | None
    reason: ClaimRejection | None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class CaptureHandle:
    """The authority to record one capture's outcome, tied to its claim. Never serialize."""

    tenant_id: str
    batch_id: str
    generation: int
    capture_id: str
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    """``recorded`` with the batch's new version, or the reason nothing was recorded."""

    recorded: bool
    reason: ReconcileRejection | None
    version: int | None = None


@dataclass(frozen=True, slots=True)
class CleanupResult:
    """What one cleanup pass did, per category."""

    leases_expired: int = 0
    """Claims without an effect whose lease ran out: back to pending."""
    effects_unresolved: int = 0
    """Claims with a started effect whose lease ran out: now unresolved."""
    approvals_expired: int = 0
    """Pending batches past their answer deadline: now expired."""
    captures_abandoned: int = 0
    """Captures still running under a dead claim: now abandoned."""
    retired: int = 0
    """Terminal batches past the audit retention: removed from the views."""


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """Safe metadata of one batch (never a token or its digest)."""

    tenant_id: str
    batch_id: str
    thread_id: str
    checkpoint_id: str
    operation: Operation
    state: BatchState
    version: int
    generation: int
    interrupt_ids: tuple[str, ...]
    approval_expires_at: datetime
    lease_expires_at: datetime | None
    effect_started: bool
    capture_state: str | None
    resolution: str | None
    reconciled_by: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class BatchPage:
    """A page of `list`; pass ``cursor`` back for the next one (None: no more)."""

    batches: list[BatchSummary]
    cursor: str | None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One event of a batch's audit trail, with tokens and token digests removed."""

    version: int
    position: int
    type: str
    recorded_at: datetime
    details: dict[str, Any]
    actor: str | None = None
    """Who appended the event (its envelope's actor); None when none was named."""


@dataclass(frozen=True, slots=True)
class BatchInspection:
    """A batch's safe metadata, its interrupts and a page of its audit trail."""

    batch: BatchSummary
    interrupts: tuple[Interrupt, ...]
    audit: list[AuditEntry]
    cursor: str | None


@dataclass(frozen=True, slots=True)
class Recovery:
    """A thread's latest checkpoint and the state of its newest open batch.

    ``checkpoint`` is the thread's latest record in the checkpoint store (the thread is
    the checkpoint session; the record carries no state: read it with
    ``log.checkpoints.read``). None when the thread has none, or when the open batch
    belongs to an operation this process does not trust.
    """

    checkpoint: CheckpointRecord | None
    batch: BatchSummary | None
    disposition: RecoveryDisposition
