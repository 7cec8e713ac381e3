"""The interrupt store's decisions, as plain functions over a batch view (no database)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from eventlog.events import interrupts as ev
from eventlog.interrupts.decisions import (
    BatchView,
    approval_deadline,
    check_responses,
    claim_is_current,
    decide_claim,
    decide_cleanup,
    decide_effect,
    decide_finish,
    decide_reconcile,
    decide_start_capture,
    digest_token,
    disposition,
    response_problem,
)
from eventlog.interrupts.models import (
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
from eventlog.interrupts.schema import check_schema, validate

NOW = datetime(2030, 1, 1, tzinfo=UTC)
LEASE = timedelta(minutes=5)
TOKEN = "secret-token"
SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}},
          "required": ["approved"]}
REF_SCHEMA = {"$defs": {"address": {"type": "string", "minLength": 1}}, "type": "object",
              "properties": {"to": {"$ref": "#/$defs/address"}}, "required": ["to"]}
DEPENDENT = {"type": "object", "dependentRequired": {"card": ["billing"]}}


def view(**changes: Any) -> BatchView:
    """A pending batch of interrupts a and b, with ``changes`` applied."""
    base = BatchView(
        tenant_id="acme", batch_id="b1", thread_id="t1", checkpoint_id="cp",
        operation=Operation("pay", "1"), state=BatchState.PENDING, version=1, generation=0,
        token_digest=None, lease_expires_at=None, approval_expires_at=NOW + timedelta(hours=1),
        effect_started=False, capture_id=None, capture_generation=None, capture_state=None,
        resolution=None, reconciled_by=None,
        interrupts=(Interrupt(id="a", reason="r", response_schema=SCHEMA),
                    Interrupt(id="b", reason="r")),
        created_position=1, created_at=NOW, updated_at=NOW,
    )
    return dataclasses.replace(base, **changes)


def claimed(**changes: Any) -> BatchView:
    """A batch claimed by ``TOKEN`` at generation 3 with a live lease."""
    fields: dict[str, Any] = {
        "state": BatchState.CLAIMED, "generation": 3, "token_digest": digest_token(TOKEN),
        "lease_expires_at": NOW + LEASE, "version": 4,
    }
    fields.update(changes)
    return view(**fields)


def cancel(interrupt_id: str) -> Resume:
    """A cancelled answer to one interrupt."""
    return Resume(interrupt_id=interrupt_id, status="cancelled")


def resume(*responses: Resume, thread: str = "t1") -> ResumeInput:
    """A resume input for batch b1."""
    if not responses:
        responses = (Resume(interrupt_id="a", status="resolved", payload={"approved": True}),
                     Resume(interrupt_id="b", status="cancelled"))
    return ResumeInput(thread_id=thread, batch_id="b1", responses=responses)


def claim(v: BatchView | None, r: ResumeInput | None = None, now: datetime = NOW,
          trusted: bool = True) -> ev.BatchClaimed | ClaimRejection:
    """decide_claim with the defaults of these tests."""
    return decide_claim(v, r or resume(), now, trusted=trusted, token="fresh", lease=LEASE)


# -- currency ----------------------------------------------------------------------------


def test_the_matching_token_and_generation_is_current() -> None:
    """Same token, same generation, lease running: current."""
    assert claim_is_current(claimed(), TOKEN, 3, NOW) is True


@pytest.mark.parametrize(
    ("v", "token", "generation", "now"),
    [
        (claimed(), "other-token", 3, NOW),
        (claimed(), TOKEN, 2, NOW),
        (claimed(), TOKEN, 3, NOW + LEASE),
        (claimed(state=BatchState.FINALIZED), TOKEN, 3, NOW),
        (view(), TOKEN, 0, NOW),
        (None, TOKEN, 3, NOW),
    ],
)
def test_anything_else_is_stale(v: BatchView | None, token: str, generation: int,
                                now: datetime) -> None:
    """Another token, an older generation, a lapsed lease, a finished or absent batch."""
    assert claim_is_current(v, token, generation, now) is False


# -- claims ------------------------------------------------------------------------------


def test_a_complete_answer_claims_the_next_generation() -> None:
    """The claim event carries the next generation, the token digest and the lease."""
    decided = claim(claimed(lease_expires_at=NOW))
    assert ev.BatchClaimed(batch_id="b1", generation=4, token_digest=digest_token("fresh"),
                           lease_expires_at=NOW + LEASE,
                           responses=tuple(resume().responses)) == decided


@pytest.mark.parametrize(
    ("v", "reason"),
    [
        (None, ClaimRejection.NOT_FOUND),
        (claimed(), ClaimRejection.ALREADY_CLAIMED),
        (claimed(state=BatchState.EFFECT_STARTED, effect_started=True),
         ClaimRejection.ALREADY_CLAIMED),
        (claimed(state=BatchState.EFFECT_STARTED, effect_started=True, lease_expires_at=NOW),
         ClaimRejection.UNRESOLVED_EFFECT),
        (view(state=BatchState.UNRESOLVED, effect_started=True),
         ClaimRejection.UNRESOLVED_EFFECT),
        (view(state=BatchState.FINALIZED), ClaimRejection.FINISHED),
        (view(state=BatchState.EXPIRED), ClaimRejection.FINISHED),
        (view(state=BatchState.RECONCILED), ClaimRejection.FINISHED),
        (view(approval_expires_at=NOW), ClaimRejection.EXPIRED),
    ],
)
def test_claims_are_refused_by_the_batch_state(v: BatchView | None,
                                               reason: ClaimRejection) -> None:
    """Absent, live-claimed, unresolved, finished or expired batches cannot be claimed."""
    assert reason == claim(v)


def test_a_replay_during_a_live_claim_is_already_claimed_whatever_it_says() -> None:
    """Even an incomplete answer is only told already_claimed while a claim is live."""
    partial = resume(Resume(interrupt_id="a", status="cancelled"))
    assert ClaimRejection.ALREADY_CLAIMED == claim(claimed(), partial)


def test_untrusted_operations_and_other_threads_are_refused() -> None:
    """The thread must match and the operation be trusted."""
    assert (ClaimRejection.THREAD_MISMATCH, ClaimRejection.UNTRUSTED_OPERATION) == (
        claim(view(), resume(thread="t2")), claim(view(), trusted=False),
    )


@pytest.mark.parametrize(
    ("responses", "reason"),
    [
        ((Resume(interrupt_id="a", status="resolved", payload={"approved": True}),),
         ClaimRejection.INCOMPLETE),
        ((cancel("a"), cancel("b"), cancel("c")), ClaimRejection.UNKNOWN_INTERRUPT),
        ((cancel("a"), cancel("a"), cancel("b")), ClaimRejection.DUPLICATE_RESPONSE),
        ((Resume(interrupt_id="a", status="resolved", payload={"approved": 1}),
          Resume(interrupt_id="b", status="cancelled")), ClaimRejection.INVALID_PAYLOAD),
        ((Resume(interrupt_id="a", status="resolved"),
          Resume(interrupt_id="b", status="cancelled")), ClaimRejection.INVALID_PAYLOAD),
        ((Resume(interrupt_id="b", status="resolved", payload=[1, "x"]),
          Resume(interrupt_id="a", status="cancelled")), None),
    ],
)
def test_responses_must_answer_every_interrupt_once_validly(
    responses: tuple[Resume, ...], reason: ClaimRejection | None
) -> None:
    """Complete, no unknown or repeated ids, resolved payloads satisfying their schema."""
    assert reason == check_responses(view().interrupts, responses)


def test_the_deadline_is_the_earliest_expiry() -> None:
    """approval_deadline takes the earliest expires_at, the TTL standing in for none."""
    soon = NOW + timedelta(minutes=1)
    batch = [Interrupt(id="a", reason="r"), Interrupt(id="b", reason="r", expires_at=soon)]
    assert (soon, NOW + timedelta(hours=2)) == (
        approval_deadline(batch, NOW, timedelta(hours=3)),
        approval_deadline(batch[:1], NOW, timedelta(hours=2)),
    )


# -- under a claim -----------------------------------------------------------------------


def test_the_effect_marker_needs_a_current_claim_and_no_earlier_effect() -> None:
    """One marker per batch: current claim only, never a second one."""
    assert (ev.EffectStarted(batch_id="b1", generation=3), None, None) == (
        decide_effect(claimed(), TOKEN, 3, NOW),
        decide_effect(claimed(effect_started=True, state=BatchState.EFFECT_STARTED), TOKEN, 3,
                      NOW),
        decide_effect(claimed(), TOKEN, 3, NOW + LEASE),
    )


def test_release_needs_no_effect_but_finalize_does_not_care() -> None:
    """Release only without an effect; finalize either way."""
    started = claimed(effect_started=True, state=BatchState.EFFECT_STARTED)
    assert (None, ev.BatchFinalized(batch_id="b1", generation=3),
            ev.BatchReleased(batch_id="b1", generation=3)) == (
        decide_finish(started, TOKEN, 3, NOW, True), decide_finish(started, TOKEN, 3, NOW, False),
        decide_finish(claimed(), TOKEN, 3, NOW, True),
    )


def test_one_capture_per_claim() -> None:
    """A claim whose generation already has a capture cannot start another."""
    assert (None, "c2") == (
        decide_start_capture(claimed(capture_generation=3, capture_state="completed"), TOKEN,
                             3, NOW, "c2"),
        getattr(decide_start_capture(claimed(capture_generation=2), TOKEN, 3, NOW, "c2"),
                "capture_id", None),
    )


# -- cleanup -----------------------------------------------------------------------------

RETENTION = timedelta(days=1)


@pytest.mark.parametrize(
    ("v", "now", "expected"),
    [
        (claimed(), NOW, None),
        (claimed(), NOW + LEASE, ev.ClaimExpired(batch_id="b1", generation=3)),
        (claimed(state=BatchState.EFFECT_STARTED, effect_started=True), NOW + LEASE,
         ev.EffectUnresolved(batch_id="b1", generation=3)),
        (view(), NOW + timedelta(hours=1), ev.ApprovalExpired(batch_id="b1")),
        (view(state=BatchState.FINALIZED, capture_id="c", capture_generation=3,
              capture_state="running"), NOW,
         ev.CaptureAbandoned(batch_id="b1", generation=3, capture_id="c")),
        (claimed(capture_id="c", capture_generation=2, capture_state="running"), NOW,
         ev.CaptureAbandoned(batch_id="b1", generation=2, capture_id="c")),
        (claimed(capture_id="c", capture_generation=3, capture_state="running"), NOW, None),
        (view(state=BatchState.FINALIZED), NOW + RETENTION, ev.BatchRetired(batch_id="b1")),
        (view(state=BatchState.EXPIRED), NOW + RETENTION - timedelta(seconds=1), None),
        (view(state=BatchState.UNRESOLVED, effect_started=True), NOW + 1000 * RETENTION, None),
    ],
)
def test_cleanup_steps(v: BatchView, now: datetime, expected: ev.Event | None) -> None:
    """Each due condition gives its one step; an unresolved effect gives none, ever."""
    assert expected == decide_cleanup(v, now, RETENTION)


# -- reconcile and recover ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("v", "ruling", "expected"),
    [
        (None, "abandoned", ReconcileRejection.NOT_FOUND),
        (view(state=BatchState.FINALIZED), "abandoned", ReconcileRejection.FINISHED),
        (view(), "effect_applied", ReconcileRejection.NO_EFFECT),
        (view(state=BatchState.UNRESOLVED, effect_started=True), "effect_not_applied", None),
        (claimed(), "abandoned", None),
    ],
)
def test_reconcile_decisions(v: BatchView | None, ruling: str,
                             expected: ReconcileRejection | None) -> None:
    """Only open batches; effect rulings only where an effect started."""
    decided = decide_reconcile(v, "ops", Reconciliation(resolution=ruling,  # type: ignore[arg-type]
                                                        evidence={"ref": 1}))
    assert expected == (decided if isinstance(decided, ReconcileRejection) else None)


def test_recovery_dispositions() -> None:
    """Nothing open, waiting, in progress, lapsed with an effect, untrusted."""
    started = claimed(state=BatchState.EFFECT_STARTED, effect_started=True)
    assert [RecoveryDisposition.NO_OPEN_BATCH, RecoveryDisposition.AWAITING_RESPONSE,
            RecoveryDisposition.IN_PROGRESS, RecoveryDisposition.UNRESOLVED,
            RecoveryDisposition.AWAITING_RESPONSE, RecoveryDisposition.UNTRUSTED_OPERATION] == [
        disposition(None, True, NOW), disposition(view(), True, NOW),
        disposition(started, True, NOW), disposition(started, True, NOW + LEASE),
        disposition(claimed(), True, NOW + LEASE), disposition(view(), False, NOW),
    ]


# -- the answer schema (JSON Schema, by jsonschema) ----------------------------------


@pytest.mark.parametrize(
    ("value", "schema", "ok"),
    [
        (True, {"type": "boolean"}, True),
        (1, {"type": "boolean"}, False),
        (True, {"type": "integer"}, False),
        (2.0, {"type": "integer"}, True),
        ("abc", {"type": "string", "maxLength": 2}, False),
        ([1, 2], {"type": "array", "items": {"type": "integer"}, "minItems": 3}, False),
        ({"a": 1}, {"type": "object", "additionalProperties": False}, False),
        ({"a": 1}, {"additionalProperties": {"type": "integer"}}, True),
        ("x", {"enum": ["x", "y"]}, True),
        (1, {"const": True}, False),
        (5, {"minimum": 1, "maximum": 4}, False),
        ("s", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, True),
        (1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, False),
        (1, {"allOf": [{"type": "integer"}, {"minimum": 2}]}, False),
        (None, {"type": ["null", "string"]}, True),
        ("anything", True, True),
        ("anything", False, False),
    ],
)
def test_the_keywords_of_the_old_subset_validate_as_before(
    value: Any, schema: Any, ok: bool,
) -> None:
    """Each supported keyword accepts and rejects as JSON Schema does."""
    assert ok == (validate(value, schema) is None)


def test_a_malformed_schema_is_refused_with_its_path() -> None:
    """A schema its meta-schema refuses is named at a JSON pointer into it."""
    assert ("#/properties/x/minLength: -1 is less than the minimum of 0", None) == (
        check_schema({"properties": {"x": {"minLength": -1}}}), check_schema(SCHEMA),
    )


@pytest.mark.parametrize(
    ("value", "schema", "ok"),
    [
        ("ab-12", {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}, True),
        ("AB-12", {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}, False),
        ("ada@example.com", {"format": "email"}, True),
        ("ada at example.com", {"format": "email"}, False),
        ("2030-01-01T12:00:00Z", {"format": "date-time"}, True),
        ("2030-13-01T12:00:00Z", {"format": "date-time"}, False),
        ("tomorrow", {"format": "date-time"}, False),
        ("https://example.com/a", {"format": "uri"}, True),
        ("not a uri", {"format": "uri"}, False),
        ("anything", {"format": "int32"}, True),  # OpenAPI's, not the specification's
        ({"to": "x"}, REF_SCHEMA, True),
        ({"to": 1}, REF_SCHEMA, False),
        ([{"to": "x"}, {"to": ""}], {**REF_SCHEMA, "type": "array",
                                     "items": {"properties": REF_SCHEMA["properties"]}}, False),
        ({"card": "4111", "billing": "x"}, DEPENDENT, True),
        ({"card": "4111"}, DEPENDENT, False),
        ({}, DEPENDENT, True),
        ({"x-extension": 1}, {"type": "object", "x-vendor": True, "nullable": True}, True),
        (["a", 1], {"$schema": "http://json-schema.org/draft-07/schema#",
                    "items": [{"type": "string"}, {"type": "integer"}]}, True),
        (["a", "b"], {"$schema": "http://json-schema.org/draft-07/schema#",
                      "items": [{"type": "string"}, {"type": "integer"}]}, False),
    ],
)
def test_what_real_applications_write_is_validated(value: Any, schema: Any, ok: bool) -> None:
    """pattern, format (asserted), $ref/$defs, dependentRequired, vendor keywords, and a
    draft-07 schema (AG-UI tools made with zod say so in $schema) read as draft-07."""
    assert (None, ok) == (check_schema(schema), validate(value, schema) is None)


@pytest.mark.parametrize(
    ("value", "schema", "detail"),
    [
        ({"to": 1}, REF_SCHEMA, "payload.to: 1 is not of type 'string'"),
        ({"card": "4111"}, DEPENDENT, "payload: 'billing' is a dependency of 'card'"),
        ({"list": ["a@b.co", "nope"]},
         {"properties": {"list": {"items": {"format": "email"}}}},
         "payload.list[1]: 'nope' is not a 'email'"),
    ],
)
def test_a_violation_names_its_path_in_the_answer(value: Any, schema: Any, detail: str) -> None:
    assert detail == validate(value, schema, "payload")


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        ({"properties": {"x": {"$ref": "https://example.com/schemas/x.json"}}},
         "#/properties/x/$ref: 'https://example.com/schemas/x.json' does not resolve"),
        ({"items": {"$ref": "other.json#/$defs/a"}},
         "#/items/$ref: 'other.json#/$defs/a' does not resolve"),
        ({"$defs": {"a": {}}, "properties": {"x": {"$ref": "#/$defs/b"}}},
         "#/properties/x/$ref: '#/$defs/b' does not resolve"),
        ({"$schema": "https://example.com/my-dialect"},
         "#/$schema: 'https://example.com/my-dialect' is not a JSON Schema dialect"),
        ({"type": "object", "properties": {"code": {"pattern": "("}}},
         "#/properties/code/pattern: '(' is not a 'regex'"),
    ],
)
def test_a_schema_that_reaches_outside_itself_or_is_broken_is_refused(
    schema: Any, detail: str,
) -> None:
    """A remote (or any unresolvable) $ref is refused when the batch is created, naming
    where it sits: nothing is fetched, now or at answer time."""
    problem = check_schema(schema)
    assert problem is not None
    assert problem.startswith(detail)


def test_a_schema_stored_before_dialects_were_checked_is_still_applied() -> None:
    """A batch created when ``$schema`` was an annotation may name a dialect nobody
    knows: its answers are checked under 2020-12, as they were, not refused outright."""
    schema = {"$schema": "https://example.com/house-dialect", "type": "integer"}
    assert check_schema(schema) is not None
    assert [None, "$: 'x' is not of type 'integer'"] == [validate(1, schema),
                                                         validate("x", schema)]


def test_local_references_resolve_through_ids_anchors_and_recursion() -> None:
    """References into an embedded $id resource, to an $anchor and to the root itself."""
    tree = {"type": "object", "properties": {"children": {"type": "array",
                                                          "items": {"$ref": "#"}}}}
    embedded = {"$id": "https://example.com/root.json",
                "$defs": {"name": {"$id": "name.json", "type": "string"},
                          "age": {"$anchor": "age", "type": "integer", "minimum": 0}},
                "properties": {"name": {"$ref": "name.json"}, "age": {"$ref": "#age"}}}
    assert (None, None) == (check_schema(tree), check_schema(embedded))
    assert [None, "$.children[0].children: 1 is not of type 'array'", None,
            "$.age: -1 is less than the minimum of 0"] == [
        validate({"children": [{"children": []}]}, tree),
        validate({"children": [{"children": 1}]}, tree),
        validate({"name": "Ada", "age": 36}, embedded),
        validate({"name": "Ada", "age": -1}, embedded),
    ]


@pytest.mark.parametrize(
    ("responses", "detail"),
    [
        ((Resume(interrupt_id="a", status="resolved", payload={"approved": 1}),
          cancel("b")), "interrupt 'a': payload.approved: 1 is not of type 'boolean'"),
        ((Resume(interrupt_id="a", status="resolved"), cancel("b")),
         "interrupt 'a': payload: None is not of type 'object'"),
        ((cancel("a"),), "interrupt 'b' is not answered"),
        ((cancel("a"), cancel("b"), cancel("c")), "the batch asks no interrupt 'c'"),
        ((cancel("a"), cancel("a"), cancel("b")), "interrupt 'a' is answered twice"),
    ],
)
def test_a_rejected_answer_says_which_interrupt_and_field_and_why(
    responses: tuple[Resume, ...], detail: str
) -> None:
    """response_problem names the interrupt, the field's path and the broken rule."""
    found = response_problem(view().interrupts, responses)
    assert found is not None
    assert detail == found[1]
