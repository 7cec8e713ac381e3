"""Every decision of the interrupt store, as plain functions over a batch's view row.

No I/O, no clock, no randomness: the store reads the row and the time, mints tokens and
ids, calls one of these, and appends the event it returns (or nothing) with the row's
``version`` as the expected version. A function that returns no event means "do
nothing": that is how a stale handle is harmless.

A claim is *current* when the row holds a claim (``claimed`` or ``effect_started``) of
the same generation whose token digest matches, and its lease has not run out. The
clock only decides when a lease may be taken over; whether a write is valid is decided
by the stream version the append is fenced on.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec

from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.interrupts.models import (
    CLAIM_STATES,
    OPEN_STATES,
    TERMINAL_STATES,
    BatchState,
    ClaimRejection,
    Interrupt,
    Operation,
    ReconcileRejection,
    Reconciliation,
    RecoveryDisposition,
    Resume,
    ResumeInput,
)
from eventlog.interrupts.schema import validate

_interrupts_decoder = msgspec.json.Decoder(tuple[Interrupt, ...])
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class BatchView:
    """One row of ``interrupt_batches``, decoded."""

    tenant_id: str
    batch_id: str
    thread_id: str
    checkpoint_id: str
    operation: Operation
    state: BatchState
    version: int
    generation: int
    token_digest: str | None
    lease_expires_at: datetime | None
    approval_expires_at: datetime
    effect_started: bool
    capture_id: str | None
    capture_generation: int | None
    capture_state: str | None
    resolution: str | None
    reconciled_by: str | None
    interrupts: tuple[Interrupt, ...]
    created_position: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BatchView:
        """Decode a view row as the storage returned it."""
        return cls(
            tenant_id=row["tenant_id"], batch_id=row["batch_id"], thread_id=row["thread_id"],
            checkpoint_id=row["checkpoint_id"],
            operation=Operation(row["operation_name"], row["operation_version"]),
            state=BatchState(row["state"]), version=int(row["version"]),
            generation=int(row["generation"]), token_digest=row["token_digest"],
            lease_expires_at=row["lease_expires_at"],
            approval_expires_at=row["approval_expires_at"],
            effect_started=bool(row["effect_started"]), capture_id=row["capture_id"],
            capture_generation=row["capture_generation"], capture_state=row["capture_state"],
            resolution=row["resolution"], reconciled_by=row["reconciled_by"],
            interrupts=_interrupts_decoder.decode(row["descriptor"]),
            created_position=int(row["created_position"]), created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


def digest_token(token: str) -> str:
    """The SHA-256 hex digest of a token: the only form a token is ever stored in."""
    return hashlib.sha256(token.encode()).hexdigest()


def approval_deadline(
    interrupts: Sequence[Interrupt], now: datetime, ttl: timedelta
) -> datetime:
    """The batch's answer deadline: the earliest interrupt deadline (``now + ttl`` for an
    interrupt without ``expires_at``)."""
    return min(interrupt.expires_at or now + ttl for interrupt in interrupts)


def lease_live(view: BatchView, now: datetime) -> bool:
    """Whether the row holds a claim whose lease has not run out."""
    return (
        view.state in CLAIM_STATES
        and view.lease_expires_at is not None
        and now < view.lease_expires_at
    )


def claim_is_current(
    view: BatchView | None, token: str, generation: int, now: datetime
) -> bool:
    """Whether (``token``, ``generation``) is the batch's live claim at ``now``."""
    if view is None or view.token_digest is None or view.generation != generation:
        return False
    return lease_live(view, now) and hmac.compare_digest(view.token_digest, digest_token(token))


# -- claiming ------------------------------------------------------------------------------


def check_responses(
    interrupts: Sequence[Interrupt], responses: Sequence[Resume]
) -> ClaimRejection | None:
    """Whether ``responses`` answer every interrupt exactly once, each payload valid.

    ``payload`` of a resolved answer must satisfy the interrupt's ``response_schema``
    (checked on its JSON form); a cancelled answer's payload is not checked.
    """
    found = response_problem(interrupts, responses)
    return None if found is None else found[0]


def response_problem(
    interrupts: Sequence[Interrupt], responses: Sequence[Resume]
) -> tuple[ClaimRejection, str] | None:
    """`check_responses` with what exactly is wrong: which interrupt, which field, why."""
    by_id = {interrupt.id: interrupt for interrupt in interrupts}
    seen: set[str] = set()
    for response in responses:
        if response.interrupt_id not in by_id:
            return (ClaimRejection.UNKNOWN_INTERRUPT,
                    f"the batch asks no interrupt {response.interrupt_id!r}")
        if response.interrupt_id in seen:
            return (ClaimRejection.DUPLICATE_RESPONSE,
                    f"interrupt {response.interrupt_id!r} is answered twice")
        seen.add(response.interrupt_id)
    if len(seen) != len(by_id):
        missing = [name for name in by_id if name not in seen]
        return ClaimRejection.INCOMPLETE, f"interrupt {missing[0]!r} is not answered"
    for response in responses:
        schema = by_id[response.interrupt_id].response_schema
        if response.status == "resolved" and schema is not None:
            as_json = msgspec.json.decode(_encoder.encode(response.payload))
            problem = validate(as_json, schema, "payload")
            if problem is not None:
                return (ClaimRejection.INVALID_PAYLOAD,
                        f"interrupt {response.interrupt_id!r}: {problem}")
    return None


def claim_rejection(
    view: BatchView | None, resume: ResumeInput, now: datetime, trusted: bool
) -> ClaimRejection | None:
    """Why ``resume`` may not claim the batch now, or None when it may.

    The order matters for replays: an answer arriving while a claim is live is
    ``already_claimed`` whatever it says, and mints nothing. A claim whose lease ran out
    without an effect may be taken over; with an effect it never may.
    """
    if view is None:
        return ClaimRejection.NOT_FOUND
    if view.thread_id != resume.thread_id:
        return ClaimRejection.THREAD_MISMATCH
    if not trusted:
        return ClaimRejection.UNTRUSTED_OPERATION
    if view.state in TERMINAL_STATES:
        return ClaimRejection.FINISHED
    if view.state is BatchState.UNRESOLVED or (view.effect_started and not lease_live(view, now)):
        return ClaimRejection.UNRESOLVED_EFFECT
    if lease_live(view, now):
        return ClaimRejection.ALREADY_CLAIMED
    if now >= view.approval_expires_at:
        return ClaimRejection.EXPIRED
    return check_responses(view.interrupts, tuple(resume.responses))


def decide_claim(
    view: BatchView | None,
    resume: ResumeInput,
    now: datetime,
    *,
    trusted: bool,
    token: str,
    lease: timedelta,
) -> ev.BatchClaimed | ClaimRejection:
    """The claim event for ``token`` (a fresh, higher generation), or the rejection."""
    reason = claim_rejection(view, resume, now, trusted)
    if reason is not None:
        return reason
    assert view is not None
    return ev.BatchClaimed(
        batch_id=view.batch_id, generation=view.generation + 1,
        token_digest=digest_token(token), lease_expires_at=now + lease,
        responses=tuple(resume.responses),
    )


# -- under a claim -------------------------------------------------------------------------


def decide_start_capture(
    view: BatchView | None, token: str, generation: int, now: datetime, capture_id: str
) -> ev.CaptureStarted | None:
    """Start a capture: only under the current claim, one capture per claim."""
    if not claim_is_current(view, token, generation, now):
        return None
    assert view is not None
    if view.capture_generation == generation:
        return None
    return ev.CaptureStarted(batch_id=view.batch_id, generation=generation,
                             capture_id=capture_id)


def decide_complete_capture(
    view: BatchView | None,
    token: str,
    generation: int,
    capture_id: str,
    now: datetime,
    outcome: str,
    snapshot: str | None,
) -> ev.CaptureCompleted | None:
    """Record a capture's outcome: current claim, this capture, and it is still running."""
    if not claim_is_current(view, token, generation, now):
        return None
    assert view is not None
    if view.capture_id != capture_id or view.capture_state != "running":
        return None
    return ev.CaptureCompleted(batch_id=view.batch_id, generation=generation,
                               capture_id=capture_id, outcome=outcome, snapshot=snapshot)


def decide_effect(
    view: BatchView | None, token: str, generation: int, now: datetime
) -> ev.EffectStarted | None:
    """The dispatch marker: current, unexpired claim and no effect ever started."""
    if not claim_is_current(view, token, generation, now):
        return None
    assert view is not None
    if view.effect_started:
        return None
    return ev.EffectStarted(batch_id=view.batch_id, generation=generation)


def decide_finish(
    view: BatchView | None, token: str, generation: int, now: datetime, release: bool
) -> ev.BatchFinalized | ev.BatchReleased | None:
    """Finalize, or release back to pending (only without an effect), under the claim."""
    if not claim_is_current(view, token, generation, now):
        return None
    assert view is not None
    if release:
        if view.effect_started:
            return None
        return ev.BatchReleased(batch_id=view.batch_id, generation=generation)
    return ev.BatchFinalized(batch_id=view.batch_id, generation=generation)


# -- maintenance and operators -------------------------------------------------------------


def capture_orphaned(view: BatchView, now: datetime) -> bool:
    """A capture still running although its claim is gone (ended, expired or replaced)."""
    if view.capture_state != "running":
        return False
    return not lease_live(view, now) or view.capture_generation != view.generation


def decide_cleanup(view: BatchView, now: datetime, retention: timedelta) -> Event | None:
    """The next maintenance step for one batch at ``now``, or None.

    Lease expiry comes first (no effect: pending again; effect: unresolved), then an
    unanswered batch past its deadline expires, then a running capture under a dead claim
    is abandoned, then a terminal batch past the retention leaves the views. An
    unresolved batch has no step here: only `decide_reconcile` ends it.
    """
    expired_lease = view.state in CLAIM_STATES and not lease_live(view, now)
    if expired_lease and view.state is BatchState.CLAIMED:
        return ev.ClaimExpired(batch_id=view.batch_id, generation=view.generation)
    if expired_lease:
        return ev.EffectUnresolved(batch_id=view.batch_id, generation=view.generation)
    if view.state is BatchState.PENDING and now >= view.approval_expires_at:
        return ev.ApprovalExpired(batch_id=view.batch_id)
    if capture_orphaned(view, now):
        assert view.capture_id is not None
        assert view.capture_generation is not None
        return ev.CaptureAbandoned(batch_id=view.batch_id, generation=view.capture_generation,
                                   capture_id=view.capture_id)
    if view.state in TERMINAL_STATES and now >= view.updated_at + retention:
        return ev.BatchRetired(batch_id=view.batch_id)
    return None


def decide_reconcile(
    view: BatchView | None, actor: str, reconciliation: Reconciliation
) -> ev.BatchReconciled | ReconcileRejection:
    """Record an operator's ruling on an open batch; it ends every claim and capture."""
    if view is None:
        return ReconcileRejection.NOT_FOUND
    if view.state not in OPEN_STATES:
        return ReconcileRejection.FINISHED
    expected = reconciliation.expected_version
    if expected is not None and expected != view.version:
        return ReconcileRejection.CHANGED
    if reconciliation.resolution != "abandoned" and not view.effect_started:
        return ReconcileRejection.NO_EFFECT
    return ev.BatchReconciled(
        batch_id=view.batch_id, actor=actor, resolution=reconciliation.resolution,
        evidence=dict(reconciliation.evidence), note=reconciliation.note,
    )


def disposition(
    view: BatchView | None, trusted: bool, now: datetime
) -> RecoveryDisposition:
    """What a recovering caller should do about the thread's open batch at ``now``
    (a lapsed lease counts as cleanup will record it)."""
    if view is None:
        return RecoveryDisposition.NO_OPEN_BATCH
    if not trusted:
        return RecoveryDisposition.UNTRUSTED_OPERATION
    if lease_live(view, now):
        return RecoveryDisposition.IN_PROGRESS
    if view.effect_started or view.state is BatchState.UNRESOLVED:
        return RecoveryDisposition.UNRESOLVED
    return RecoveryDisposition.AWAITING_RESPONSE
