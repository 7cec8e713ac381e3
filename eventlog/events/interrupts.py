"""The events of an interrupt batch's stream (``interrupt-batch:<batch_id>``), and the
AG-UI shapes they carry (`Interrupt`, `Resume`). No store is loaded to import them.

Every change to a batch is one of these, appended with the stream version it was decided
against. Tags are stored forever: never rename one; new fields get defaults. No event
carries a raw token: a claim records the SHA-256 digest of its token and its generation,
and every later event written under that claim records the generation it acted under.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from eventlog.events import SEALED, Event, record_key, register_event

# -- what the events carry: AG-UI's shapes, also the store's inputs ----------------------


class Interrupt(msgspec.Struct, frozen=True, kw_only=True):
    """One question of a batch (AG-UI's ``Interrupt``).

    ``id`` is unique within the batch and is the key a `Resume` answers. ``reason`` is an
    open string (``tool_call``, ``input_required``, ``confirmation`` or
    ``framework:name``). ``response_schema`` is a JSON Schema the answer's payload must
    satisfy (checked as `eventlog.interrupts.schema` says: its dialect, local references
    only, formats asserted). ``expires_at`` is the
    last moment an answer is admitted; without it the store's approval TTL applies.
    """

    id: str
    reason: str
    message: Annotated[str | None, SEALED] = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: datetime | None = None
    metadata: Annotated[dict[str, Any] | None, SEALED] = None


class Resume(msgspec.Struct, frozen=True, kw_only=True):
    """A person's answer to one interrupt (AG-UI's resume entry).

    A denial goes in ``payload`` (e.g. ``{"approved": false}``); ``status`` is
    ``"resolved"`` or ``"cancelled"``. ``metadata`` is the envelope, e.g. a signature.
    """

    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Annotated[Any, SEALED] = None
    metadata: Annotated[dict[str, Any] | None, SEALED] = None


# -- the events -------------------------------------------------------------------------


class _InBatchStream:
    """Every event of a batch belongs to that batch's stream (see `Event.home_stream`)."""

    __slots__ = ()
    batch_id: str

    def home_stream(self) -> str | None:
        """The batch's stream."""
        return batch_stream(self.batch_id)


@register_event
class BatchCreated(_InBatchStream, Event, tag="interrupt.batch_created", frozen=True):
    """A batch's descriptor, persisted before the batch is emitted to the client."""

    batch_id: str
    thread_id: str
    checkpoint_id: str
    operation_name: str
    operation_version: str
    interrupts: tuple[Interrupt, ...]
    approval_expires_at: datetime

    def sealed_record(self) -> str:
        """The batch's record: its row binds the interrupts' sealed fields to its id."""
        return record_key(self.batch_id)


@register_event
class BatchClaimed(_InBatchStream, Event, tag="interrupt.batch_claimed", frozen=True):
    """A complete answer was accepted: a fresh token (recorded only as its digest), a
    higher generation and a preparation lease. ``responses`` are the person's answers."""

    batch_id: str
    generation: int
    token_digest: str
    lease_expires_at: datetime
    responses: tuple[Resume, ...]


@register_event
class CaptureStarted(_InBatchStream, Event, tag="interrupt.capture_started", frozen=True):
    """The claim holder began observing the resumed run's response."""

    batch_id: str
    generation: int
    capture_id: str


@register_event
class CaptureCompleted(_InBatchStream, Event, tag="interrupt.capture_completed", frozen=True):
    """The capture's terminal outcome and snapshot, under its claim."""

    batch_id: str
    generation: int
    capture_id: str
    outcome: str
    snapshot: Annotated[str | None, SEALED] = None


@register_event
class EffectStarted(_InBatchStream, Event, tag="interrupt.effect_started", frozen=True):
    """The irreversible dispatch marker: at most one per batch, ever."""

    batch_id: str
    generation: int


@register_event
class BatchFinalized(_InBatchStream, Event, tag="interrupt.batch_finalized", frozen=True):
    """The claim holder finished the batch."""

    batch_id: str
    generation: int


@register_event
class BatchReleased(_InBatchStream, Event, tag="interrupt.batch_released", frozen=True):
    """The claim holder gave the batch back to pending (no effect had started)."""

    batch_id: str
    generation: int


@register_event
class ClaimExpired(_InBatchStream, Event, tag="interrupt.claim_expired", frozen=True):
    """Cleanup: a claim without an effect outlived its lease; the batch is pending again."""

    batch_id: str
    generation: int


@register_event
class EffectUnresolved(_InBatchStream, Event, tag="interrupt.effect_unresolved", frozen=True):
    """Cleanup: a claim with a started effect outlived its lease; only a reconcile ends it."""

    batch_id: str
    generation: int


@register_event
class ApprovalExpired(_InBatchStream, Event, tag="interrupt.approval_expired", frozen=True):
    """Cleanup: nobody answered the pending batch before its deadline."""

    batch_id: str


@register_event
class CaptureAbandoned(_InBatchStream, Event, tag="interrupt.capture_abandoned", frozen=True):
    """Cleanup: a capture still running under a dead claim."""

    batch_id: str
    generation: int
    capture_id: str


@register_event
class BatchReconciled(_InBatchStream, Event, tag="interrupt.batch_reconciled", frozen=True):
    """An operator's ruling: who (``actor``) decided what on which evidence. Retires
    every claim and capture authority; never dispatches."""

    batch_id: str
    actor: str
    resolution: str
    evidence: Annotated[dict[str, Any], SEALED]
    note: Annotated[str | None, SEALED] = None


@register_event
class BatchRetired(_InBatchStream, Event, tag="interrupt.batch_retired", frozen=True):
    """Cleanup: a terminal batch past the audit retention leaves the views (not the log)."""

    batch_id: str


BATCH_EVENTS: tuple[type[Event], ...] = (
    BatchCreated, BatchClaimed, CaptureStarted, CaptureCompleted, EffectStarted,
    BatchFinalized, BatchReleased, ClaimExpired, EffectUnresolved, ApprovalExpired,
    CaptureAbandoned, BatchReconciled, BatchRetired,
)
"""Every event type of a batch stream."""


BATCH_STREAM_PREFIX = "interrupt-batch:"
"""Every batch's stream id starts with this (`batch_stream`)."""


def batch_stream(batch_id: str) -> str:
    """The stream a batch's events go to."""
    return f"{BATCH_STREAM_PREFIX}{batch_id}"
