"""The interrupt store against a small pure model, on every backend (Hypothesis stateful).

Workers hold claims and captures from many generations; answers come complete and
incomplete; a fake clock jumps past leases, deadlines and the audit retention; cleanup,
release, finish and reconcile run in between. After every step:

1. a stale handle appended no event and left the batch's row byte-identical (checked in
   the rule that used it);
2. at most one held claim is current per batch; generations strictly increase; no token
   is ever minted twice;
3. at most one dispatch marker per batch, ever, and none after a reconcile;
4. cleanup never resolves, expires away or retires a batch whose effect is unresolved;
5. every touched batch's view row equals the fold of its stream (and, at the end of the
   test, `compare_views` over the whole log is empty).

One log per test (one `asyncio.Runner`), a fresh scope per example. Cleanup is global,
so each example first settles what earlier examples left (moving the clock far ahead)
and then checks cleanup's counts exactly. Examples per backend: the profile's count
(200 under CI) on memory, half of it on the file store, a fifth on SQLite and
PostgreSQL (see `examples_for`), to keep this test under a minute in CI.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from eventlog import EventLog
from eventlog.events import interrupts as ev
from eventlog.interrupts import (
    CaptureHandle,
    ClaimRejection,
    CleanupResult,
    Finish,
    Interrupt,
    InterruptClaim,
    InterruptOptions,
    ReconcileRejection,
    Reconciliation,
    Resume,
    ResumeInput,
)
from eventlog.interrupts.decisions import BatchView, claim_is_current
from eventlog.testing.interrupts import (
    APPROVAL,
    PAY,
    FakeClock,
    batch_row,
    open_interrupt_log,
    view_differences,
)
from projections import fold_events
from projections.interrupts import InterruptBatches
from tests.conftest import BackendTarget, fresh_id

# Model-based runs: 200 examples each under CI=true, minutes in all (pytest -m properties).
pytestmark = pytest.mark.properties

LEASE = timedelta(minutes=5)
TTL = timedelta(hours=2)
RETENTION = timedelta(days=1)
OPTIONS = InterruptOptions(preparation_lease=LEASE, approval_ttl=TTL, audit_retention=RETENTION,
                           cleanup_batch_size=200)
STEPS = {"tick": timedelta(seconds=30), "half_lease": LEASE / 2, "lease": LEASE,
         "deadline": TTL + timedelta(minutes=1), "retention": RETENTION + timedelta(hours=1)}
VARIANTS = {
    "complete": None, "cancelled": None, "missing": ClaimRejection.INCOMPLETE,
    "unknown": ClaimRejection.UNKNOWN_INTERRUPT, "duplicate": ClaimRejection.DUPLICATE_RESPONSE,
    "invalid": ClaimRejection.INVALID_PAYLOAD, "thread": ClaimRejection.THREAD_MISMATCH,
}
ANSWERS = ["complete"] * 4 + sorted(VARIANTS)  # mostly answers that can claim
CLOCK_STEPS = ["tick"] * 2 + ["half_lease"] * 3 + ["lease"] * 3 + ["deadline", "retention"]
RULINGS = ["effect_applied", "effect_not_applied"] * 2 + ["abandoned"]  # rarely end a batch
CLAIM_STATES = ("claimed", "effect_started")
TERMINAL = ("finalized", "expired", "reconciled")


@dataclasses.dataclass
class ModelBatch:
    """What the store should hold for one batch."""

    batch_id: str
    ids: tuple[str, ...]
    deadline: datetime
    updated: datetime
    state: str = "pending"
    generation: int = 0
    token: str | None = None
    lease: datetime | None = None
    effect: bool = False
    capture: tuple[str, int, str] | None = None  # (capture id, generation, state)
    retired: bool = False

    def live(self, now: datetime) -> bool:
        """A claim whose lease has not run out."""
        return self.state in CLAIM_STATES and self.lease is not None and now < self.lease

    def current(self, token: str, generation: int, now: datetime) -> bool:
        """Whether a handle with ``token``/``generation`` may act."""
        return self.live(now) and (token, generation) == (self.token, self.generation)

    def rejection(self, variant: str, now: datetime) -> ClaimRejection | None:
        """Why an answer of kind ``variant`` may not claim now (the order is the spec's)."""
        if self.retired:
            return ClaimRejection.NOT_FOUND
        if variant == "thread":
            return ClaimRejection.THREAD_MISMATCH
        if self.state in TERMINAL:
            return ClaimRejection.FINISHED
        if self.state == "unresolved" or (self.effect and not self.live(now)):
            return ClaimRejection.UNRESOLVED_EFFECT
        if self.live(now):
            return ClaimRejection.ALREADY_CLAIMED
        if now >= self.deadline:
            return ClaimRejection.EXPIRED
        return VARIANTS[variant]

    def end_claim(self, state: str, now: datetime) -> None:
        """The claim is gone; the batch moves to ``state``."""
        self.state, self.token, self.lease, self.updated = state, None, None, now

    def cleanup_step(self, now: datetime) -> str | None:
        """Apply cleanup's next step, returning its category."""
        if self.retired:
            return None
        orphan = (self.capture is not None and self.capture[2] == "running"
                  and (not self.live(now) or self.capture[1] != self.generation))
        if self.state in CLAIM_STATES and not self.live(now):
            claimed = self.state == "claimed"
            self.end_claim("pending" if claimed else "unresolved", now)
            return "leases_expired" if claimed else "effects_unresolved"
        if self.state == "pending" and now >= self.deadline:
            self.end_claim("expired", now)
            return "approvals_expired"
        if orphan:
            assert self.capture is not None
            self.capture, self.updated = (*self.capture[:2], "abandoned"), now
            return "captures_abandoned"
        if self.state in TERMINAL and now >= self.updated + RETENTION:
            self.retired = True
            return "retired"
        return None


class InterruptMachine(RuleBasedStateMachine):
    """Drives the real store (class attributes set per test) and the model side by side."""

    runner: asyncio.Runner
    log: EventLog
    clock: FakeClock

    batches = Bundle("batches")
    claims = Bundle("claims")
    captures = Bundle("captures")

    def __init__(self) -> None:
        super().__init__()
        self.scope = fresh_id("scope")
        self.model: dict[str, ModelBatch] = {}
        self.tokens: set[str] = set()
        self.held: list[InterruptClaim] = []
        self.touched: set[str] = set()
        self.store = self.log.interrupts
        self._settle()

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    def _settle(self) -> None:
        """Let cleanup finish what earlier examples left, so counts here are exact."""
        for _ in range(2):
            self.clock.advance(days=3)
            while self.run(self.store.cleanup()) != CleanupResult():
                pass
        self.clock.advance(days=1)

    # -- observing -----------------------------------------------------------------------

    def snapshot(self, batch_id: str) -> tuple[Any, Any]:
        """The batch stream's head and its view row, to prove an action changed nothing."""
        stream = ev.batch_stream(batch_id)
        return (self.run(self.log.storage.stream_head(self.scope, stream)),
                self.run(batch_row(self.log, self.scope, batch_id)))

    def act(self, batch_id: str, expected: bool, coroutine: Any) -> Any:
        """Run one store call; it must succeed exactly when the model says, and a call
        that does nothing must change nothing."""
        before = None if expected else self.snapshot(batch_id)
        result = self.run(coroutine)
        done = result is not None and result is not False
        assert expected == done
        if not done:
            assert before == self.snapshot(batch_id)
        self.touched.add(batch_id)
        return result

    # -- rules ---------------------------------------------------------------------------

    @initialize(target=batches, size=st.integers(1, 3), short=st.booleans())
    def first_batch(self, size: int, short: bool) -> str:
        """Every example starts with a batch."""
        return self.create(size, short)

    @precondition(lambda self: sum(m.state not in TERMINAL for m in self.model.values()) < 3)
    @rule(target=batches, size=st.integers(1, 3), short=st.booleans())
    def create(self, size: int, short: bool) -> str:
        """A new batch; ``short`` gives one interrupt a deadline between lease and TTL."""
        now = self.clock.now
        soon = now + timedelta(minutes=30)
        interrupts = [
            Interrupt(id=f"i{n}", reason="confirmation", response_schema=APPROVAL,
                      expires_at=soon if short and n == 0 else None)
            for n in range(size)
        ]
        batch = self.run(self.store.create(self.scope, "thread", interrupts, "cp", operation=PAY))
        ids = tuple(i.id for i in interrupts)
        self.model[batch.batch_id] = ModelBatch(batch.batch_id, ids,
                                                soon if short else now + TTL, now)
        self.touched.add(batch.batch_id)
        return str(batch.batch_id)

    @rule(target=claims, batch_id=batches, variant=st.sampled_from(ANSWERS))
    def try_claim(self, batch_id: str, variant: str) -> Any:
        """Answer a batch; the model predicts the claim or the exact rejection."""
        model = self.model[batch_id]
        now = self.clock.now
        expected = model.rejection(variant, now)
        before = None if expected is None else self.snapshot(batch_id)
        result = self.run(self.store.try_claim(self.scope, resume_input(model, variant)))
        self.touched.add(batch_id)
        assert expected == result.reason
        if result.claim is None:
            assert before == self.snapshot(batch_id)
            return multiple()
        claim = result.claim
        assert (model.generation + 1, False) == (claim.generation, claim.token in self.tokens)
        assert claim.expires_at == now + LEASE
        self.tokens.add(claim.token)
        self.held.append(claim)
        model.generation, model.token, model.lease = claim.generation, claim.token, now + LEASE
        model.state, model.updated = "claimed", now
        return claim

    @rule(claim=claims)
    def try_start_effect(self, claim: InterruptClaim) -> None:
        """The dispatch marker: only the current claim, only once."""
        model = self.model[claim.batch_id]
        expected = model.current(claim.token, claim.generation, self.clock.now) and not model.effect
        self.act(claim.batch_id, expected, self.store.try_start_effect(claim))
        if expected:
            model.effect, model.state, model.updated = True, "effect_started", self.clock.now

    @rule(target=captures, claim=claims)
    def start_capture(self, claim: InterruptClaim) -> Any:
        """One capture per current claim."""
        model = self.model[claim.batch_id]
        now = self.clock.now
        expected = model.current(claim.token, claim.generation, now) and (
            model.capture is None or model.capture[1] != claim.generation
        )
        handle = self.act(claim.batch_id, expected, self.store.start_capture(claim))
        if handle is None:
            return multiple()
        model.capture, model.updated = (handle.capture_id, claim.generation, "running"), now
        return handle

    @rule(handle=captures, outcome=st.sampled_from(["completed", "failed", "cancelled"]))
    def complete_capture(self, handle: CaptureHandle, outcome: str) -> None:
        """Only the running capture of the current claim records an outcome."""
        model = self.model[handle.batch_id]
        now = self.clock.now
        expected = model.current(handle.token, handle.generation, now) and (
            model.capture == (handle.capture_id, handle.generation, "running")
        )
        self.act(handle.batch_id, expected,
                 self.store.complete_capture(handle, outcome, f"snapshot {outcome}"))
        if expected:
            model.capture, model.updated = (handle.capture_id, handle.generation, outcome), now

    @rule(claim=claims, finish=st.sampled_from(Finish))
    def finish(self, claim: InterruptClaim, finish: Finish) -> None:
        """Finalize, or release without an effect, under the current claim only."""
        model = self.model[claim.batch_id]
        now = self.clock.now
        release = finish is Finish.RELEASE
        expected = model.current(claim.token, claim.generation, now) and not (
            release and model.effect
        )
        self.act(claim.batch_id, expected, self.store.finish(claim, finish))
        if expected:
            model.end_claim("pending" if release else "finalized", now)

    @rule(batch_id=batches, resolution=st.sampled_from(RULINGS))
    def reconcile(self, batch_id: str, resolution: str) -> None:
        """An operator's ruling on an open batch; it retires every claim."""
        model = self.model[batch_id]
        ruling = Reconciliation(resolution=resolution, evidence={"ref": "r"})  # type: ignore[arg-type]
        if model.retired:
            expected = ReconcileRejection.NOT_FOUND
        elif model.state in TERMINAL:
            expected = ReconcileRejection.FINISHED
        elif resolution != "abandoned" and not model.effect:
            expected = ReconcileRejection.NO_EFFECT
        else:
            expected = None
        before = None if expected is None else self.snapshot(batch_id)
        result = self.run(self.store.reconcile([self.scope], batch_id, "ops", ruling))
        self.touched.add(batch_id)
        assert expected == result.reason
        if expected is None:
            model.end_claim("reconciled", self.clock.now)
        else:
            assert before == self.snapshot(batch_id)

    # The claim holders' rules once more, so workers act more often than operators.
    @rule(target=claims, batch_id=batches, variant=st.sampled_from(ANSWERS))
    def try_claim_again(self, batch_id: str, variant: str) -> Any:
        """Another worker answers."""
        return self.try_claim(batch_id, variant)

    @rule(claim=claims)
    def try_start_effect_again(self, claim: InterruptClaim) -> None:
        """Another worker tries to dispatch."""
        self.try_start_effect(claim)

    @rule(claim=claims, finish=st.sampled_from(Finish))
    def finish_again(self, claim: InterruptClaim, finish: Finish) -> None:
        """Another worker finishes."""
        self.finish(claim, finish)

    @rule(handle=captures, outcome=st.sampled_from(["completed", "failed", "cancelled"]))
    def complete_capture_again(self, handle: CaptureHandle, outcome: str) -> None:
        """A capture's outcome arrives (again)."""
        self.complete_capture(handle, outcome)

    @rule(step=st.sampled_from(CLOCK_STEPS))
    def time_passes(self, step: str) -> None:
        """Time passes: a little, past a lease, past a deadline, past the retention."""
        self.clock.advance(seconds=STEPS[step].total_seconds())

    @rule()
    def cleanup(self) -> None:
        """One pass: exactly the model's steps, counted per category."""
        now = self.clock.now
        unresolved = {b for b, m in self.model.items()
                      if m.effect and m.state not in ("finalized", "reconciled")}
        expected: dict[str, int] = {}
        for model in self.model.values():
            while (category := model.cleanup_step(now)) is not None:
                expected[category] = expected.get(category, 0) + 1
        result = self.run(self.store.cleanup())
        assert CleanupResult(**expected) == result
        for batch_id in unresolved:
            row = self.run(batch_row(self.log, self.scope, batch_id))
            assert row is not None
            assert row["state"] in ("effect_started", "unresolved")
        self.touched.update(self.model)

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def touched_batches_match_the_model_and_their_streams(self) -> None:
        """Rows equal the fold of their stream and the model; stream-level safety holds."""
        for batch_id in sorted(self.touched):
            self._check_batch(batch_id)
        self.touched.clear()

    def _check_batch(self, batch_id: str) -> None:
        model = self.model[batch_id]
        stream = ev.batch_stream(batch_id)
        events = self.run(_read(self.log, self.scope, stream))
        folded = fold_events([InterruptBatches()], events).snapshot()["interrupt_batches"]
        row = self.run(batch_row(self.log, self.scope, batch_id))
        assert (folded[0] if folded else None) == row
        check_stream([e.event for e in events])
        if model.retired:
            assert row is None
            return
        assert row is not None
        capture = None if row["capture_id"] is None else (
            row["capture_id"], row["capture_generation"], row["capture_state"])
        assert (model.state, model.generation, model.effect, model.capture) == (
            row["state"], row["generation"], row["effect_started"], capture)
        view = BatchView.from_row(row)
        live = [c for c in self.held if c.batch_id == batch_id
                and claim_is_current(view, c.token, c.generation, self.clock.now)]
        assert len(live) <= 1


def resume_input(model: ModelBatch, variant: str) -> ResumeInput:
    """An answer of the given kind to the model's batch."""
    status = "cancelled" if variant == "cancelled" else "resolved"
    responses = [Resume(interrupt_id=i, status=status, payload={"approved": True})  # type: ignore[arg-type]
                 for i in model.ids]
    if variant == "missing":
        responses = responses[:-1]
    elif variant == "unknown":
        responses.append(Resume(interrupt_id="nope", status="cancelled"))
    elif variant == "duplicate":
        responses.append(responses[0])
    elif variant == "invalid":
        responses[0] = Resume(interrupt_id=model.ids[0], status="resolved",
                              payload={"approved": "no"})
    thread = "other-thread" if variant == "thread" else "thread"
    return ResumeInput(thread_id=thread, batch_id=model.batch_id, responses=responses)


async def _read(log: EventLog, scope: str, stream: str) -> list[Any]:
    return [event async for event in log.read_stream(scope, stream)]


def check_stream(events: list[Any]) -> None:
    """Safety over one batch's events: one dispatch marker at most and none after a
    reconcile; generations increase; after an effect, nothing but finalize or reconcile
    ends the batch, and it is retired only after one of them."""
    generations = [e.generation for e in events if isinstance(e, ev.BatchClaimed)]
    assert generations == sorted(set(generations))
    kinds = [type(e) for e in events]
    assert kinds.count(ev.EffectStarted) <= 1
    if ev.BatchReconciled in kinds:
        assert ev.EffectStarted not in kinds[kinds.index(ev.BatchReconciled):]
    if ev.EffectStarted in kinds:
        after = kinds[kinds.index(ev.EffectStarted):]
        forbidden = {ev.ClaimExpired, ev.ApprovalExpired, ev.BatchReleased, ev.BatchClaimed}
        assert not forbidden & set(after)
        if ev.BatchRetired in after:
            assert {ev.BatchFinalized, ev.BatchReconciled} & set(after)


def examples_for(backend: str) -> int:
    """The profile's example count on memory; fewer where every append waits for the disk
    (SQLite fsyncs every commit: 200 examples took 80 s) or a server."""
    full = settings.default.max_examples
    divisor = {"file": 2, "sqlite": 5, "postgresql": 5}.get(backend, 1)
    return max(10, full // divisor)


@pytest.mark.slow
def test_interrupt_store_matches_the_model(target: BackendTarget) -> None:
    """The real store follows the model and keeps every safety invariant, on each backend."""
    runner = asyncio.Runner()
    clock = FakeClock()
    opened = open_interrupt_log(target, clock, OPTIONS)
    log = runner.run(opened.__aenter__())
    try:
        machine = type("Machine", (InterruptMachine,),
                       {"runner": runner, "log": log, "clock": clock})
        run_state_machine_as_test(machine, settings=settings(
            max_examples=examples_for(target.name), stateful_step_count=30, deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ))
        assert [] == runner.run(view_differences(log))
    finally:
        runner.run(opened.__aexit__(None, None, None))
        runner.close()
