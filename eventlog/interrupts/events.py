"""The events of an interrupt batch's stream (``interrupt-batch:<batch_id>``).

Every change to a batch is one of these, appended with the stream version it was decided
against. Tags are stored forever: never rename one; new fields get defaults. No event
carries a raw token: a claim records the SHA-256 digest of its token and its generation,
and every later event written under that claim records the generation it acted under.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventlog.events import Event, register_event
from eventlog.interrupts.models import Interrupt, Resume


@register_event
class BatchCreated(Event, tag="interrupt.batch_created", frozen=True):
    """A batch's descriptor, persisted before the batch is emitted to the client."""

    batch_id: str
    thread_id: str
    checkpoint_id: str
    operation_name: str
    operation_version: str
    interrupts: tuple[Interrupt, ...]
    approval_expires_at: datetime


@register_event
class BatchClaimed(Event, tag="interrupt.batch_claimed", frozen=True):
    """A complete answer was accepted: a fresh token (recorded only as its digest), a
    higher generation and a preparation lease. ``responses`` are the person's answers."""

    batch_id: str
    generation: int
    token_digest: str
    lease_expires_at: datetime
    responses: tuple[Resume, ...]


@register_event
class CaptureStarted(Event, tag="interrupt.capture_started", frozen=True):
    """The claim holder began observing the resumed run's response."""

    batch_id: str
    generation: int
    capture_id: str


@register_event
class CaptureCompleted(Event, tag="interrupt.capture_completed", frozen=True):
    """The capture's terminal outcome and snapshot, under its claim."""

    batch_id: str
    generation: int
    capture_id: str
    outcome: str
    snapshot: str | None = None


@register_event
class EffectStarted(Event, tag="interrupt.effect_started", frozen=True):
    """The irreversible dispatch marker: at most one per batch, ever."""

    batch_id: str
    generation: int


@register_event
class BatchFinalized(Event, tag="interrupt.batch_finalized", frozen=True):
    """The claim holder finished the batch."""

    batch_id: str
    generation: int


@register_event
class BatchReleased(Event, tag="interrupt.batch_released", frozen=True):
    """The claim holder gave the batch back to pending (no effect had started)."""

    batch_id: str
    generation: int


@register_event
class ClaimExpired(Event, tag="interrupt.claim_expired", frozen=True):
    """Cleanup: a claim without an effect outlived its lease; the batch is pending again."""

    batch_id: str
    generation: int


@register_event
class EffectUnresolved(Event, tag="interrupt.effect_unresolved", frozen=True):
    """Cleanup: a claim with a started effect outlived its lease; only a reconcile ends it."""

    batch_id: str
    generation: int


@register_event
class ApprovalExpired(Event, tag="interrupt.approval_expired", frozen=True):
    """Cleanup: nobody answered the pending batch before its deadline."""

    batch_id: str


@register_event
class CaptureAbandoned(Event, tag="interrupt.capture_abandoned", frozen=True):
    """Cleanup: a capture still running under a dead claim."""

    batch_id: str
    generation: int
    capture_id: str


@register_event
class BatchReconciled(Event, tag="interrupt.batch_reconciled", frozen=True):
    """An operator's ruling: who (``actor``) decided what on which evidence. Retires
    every claim and capture authority; never dispatches."""

    batch_id: str
    actor: str
    resolution: str
    evidence: dict[str, Any]
    note: str | None = None


@register_event
class BatchRetired(Event, tag="interrupt.batch_retired", frozen=True):
    """Cleanup: a terminal batch past the audit retention leaves the views (not the log)."""

    batch_id: str


BATCH_EVENTS: tuple[type[Event], ...] = (
    BatchCreated, BatchClaimed, CaptureStarted, CaptureCompleted, EffectStarted,
    BatchFinalized, BatchReleased, ClaimExpired, EffectUnresolved, ApprovalExpired,
    CaptureAbandoned, BatchReconciled, BatchRetired,
)
"""Every event type of a batch stream."""


BATCH_TABLE = "interrupt_batches"
"""The view table of batches (declared in `projections.interrupts`)."""


def batch_stream(batch_id: str) -> str:
    """The stream a batch's events go to."""
    return f"interrupt-batch:{batch_id}"
