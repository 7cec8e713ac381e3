"""Contract: the interrupt store, part 1: create, claim, capture, effect, finish (with a
fake clock)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from structlog.testing import capture_logs

from eventlog import InvalidInput, OpenLog, PayloadTooLarge
from eventlog.interrupts import (
    CapacityExceeded,
    ClaimRejection,
    Finish,
    Interrupt,
    InterruptOptions,
    InterruptStore,
    Operation,
    Resume,
)
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.interrupts import (
    OPTIONS,
    PAY,
    FakeClock,
    answer,
    batch_row,
    create,
    event_count,
    interrupts,
    open_interrupt_log,
    view_differences,
    whole_flow,
)


def _responses(*entries: tuple[str, str, object]) -> list[Resume]:
    return [Resume(interrupt_id=i, status=s, payload=p) for i, s, p in entries]  # type: ignore[arg-type]


class InterruptsBase(ContractBase):
    """The fixtures of the interrupt store's contract: ``clock`` and ``ilog``."""

    @pytest.fixture
    def clock(self) -> FakeClock:
        """A fake clock at a fixed start."""
        return FakeClock()

    @pytest_asyncio.fixture(loop_scope="function")
    async def ilog(self, backend: ContractBackend, clock: FakeClock) -> AsyncIterator[OpenLog]:
        """A log on the backend under test, driven by ``clock``, with the interrupt options
        `OPTIONS`."""
        async with open_interrupt_log(backend, clock) as log:
            yield log


class InterruptsContract(InterruptsBase):
    """Contract: the interrupt store's create, claim, capture, effect and finish."""

    # -- create --------------------------------------------------------------------------

    async def test_create_returns_a_pending_batch_listed_in_its_scope(self, ilog: OpenLog) -> None:
        """create persists the batch: list shows it pending with its interrupt ids."""
        batch = await create(ilog, "acme", "thread-1", "a", "b")
        page = await ilog.interrupts.list(["acme"])
        assert [(batch.batch_id, "pending", ("a", "b"))] == [
            (b.batch_id, b.state.value, b.interrupt_ids) for b in page.batches
        ]

    async def test_create_sets_the_deadline_from_the_earliest_expiry(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """The answer deadline is the earliest expires_at, the approval TTL otherwise."""
        soon = clock.now + timedelta(minutes=10)
        batch = await ilog.interrupts.create(
            "acme", "t",
            [Interrupt(id="a", reason="r", expires_at=soon), Interrupt(id="b", reason="r")],
            "cp", operation=PAY,
        )
        plain = await create(ilog)
        assert (soon, clock.now + OPTIONS.approval_ttl) == (
            batch.approval_expires_at, plain.approval_expires_at,
        )

    @pytest.mark.parametrize(
        ("bad", "field"),
        [
            ([], "interrupts"),
            ([Interrupt(id="a", reason="r"), Interrupt(id="a", reason="r")], "interrupts"),
            (["not an interrupt"], "interrupts[0]"),
            ([Interrupt(id="", reason="r")], "interrupts[0].id"),
            ([Interrupt(id="a", reason="r", response_schema={"$ref": "https://x.test/s"})],
             "interrupts[0].response_schema"),
            ([Interrupt(id="a", reason="r", response_schema={"enum": ["x" * 70_000]})],
             "interrupts[0].response_schema"),
            ([Interrupt(id="a", reason="r", message="m" * 70_000)], "interrupts[0].message"),
        ],
    )
    async def test_create_refuses_bad_batches_and_writes_nothing(
        self, ilog: OpenLog, bad: list[Interrupt], field: str
    ) -> None:
        """Empty batches, repeated ids, bad ids and remote-referencing or oversized schemas
        are refused."""
        with pytest.raises(InvalidInput) as raised:
            await ilog.interrupts.create("acme", "t", bad, "cp", operation=PAY)
        assert (field, 0) == (raised.value.field, await event_count(ilog))

    async def test_create_refuses_an_expiry_in_the_past(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """An interrupt that has already expired cannot be created."""
        past = clock.now - timedelta(seconds=1)
        with pytest.raises(InvalidInput) as raised:
            await ilog.interrupts.create(
                "acme", "t", [Interrupt(id="a", reason="r", expires_at=past)], "cp", operation=PAY
            )
        assert "interrupts[0].expires_at" == raised.value.field

    async def test_create_refuses_beyond_the_scope_capacity(
        self, backend: ContractBackend
    ) -> None:
        """A scope at capacity refuses the next batch; other scopes and finished batches don't
        count."""
        clock = FakeClock()
        options = InterruptOptions(capacity=2)
        async with open_interrupt_log(backend, clock, options) as log:
            first = await create(log)
            await create(log)
            with pytest.raises(CapacityExceeded):
                await create(log)
            await create(log, "other-scope")
            claim = (await log.interrupts.try_claim("acme", answer(first))).claim
            assert claim is not None
            await log.interrupts.finish(claim, Finish.FINALIZE)
            await create(log)
            assert 6 == await event_count(log)

    async def test_create_refuses_an_untrusted_operation(self, backend: ContractBackend) -> None:
        """With a registry, a batch for an operation it does not list is refused."""
        async with open_interrupt_log(backend, FakeClock(), operations=[PAY]) as log:
            with pytest.raises(InvalidInput) as raised:
                await log.interrupts.create("acme", "t", interrupts(), "cp",
                                            operation=Operation("payments", "2"))
            assert ("operation", 0) == (raised.value.field, await event_count(log))

    # -- claim ---------------------------------------------------------------------------

    async def test_try_claim_mints_a_token_generation_and_lease(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """A complete answer claims: generation 1, a lease of preparation_lease, a long token."""
        batch = await create(ilog)
        result = await ilog.interrupts.try_claim("acme", answer(batch))
        assert result.claim is not None
        assert (None, 1, clock.now + OPTIONS.preparation_lease) == (
            result.reason, result.claim.generation, result.claim.expires_at,
        )
        assert len(result.claim.token) >= 43  # 32 random bytes, URL-safe base64

    async def test_replaying_a_live_claim_mints_nothing(self, ilog: OpenLog) -> None:
        """The same answer again while the claim is live: already_claimed, nothing appended."""
        batch = await create(ilog)
        await ilog.interrupts.try_claim("acme", answer(batch))
        before = await event_count(ilog)
        again = await ilog.interrupts.try_claim("acme", answer(batch))
        assert (None, ClaimRejection.ALREADY_CLAIMED, before) == (
            again.claim, again.reason, await event_count(ilog),
        )

    @pytest.mark.parametrize(
        ("responses", "reason"),
        [
            (_responses(("a", "resolved", {"approved": True})), ClaimRejection.INCOMPLETE),
            (_responses(("a", "resolved", {"approved": True}), ("b", "cancelled", None),
                        ("zzz", "resolved", None)), ClaimRejection.UNKNOWN_INTERRUPT),
            (_responses(("a", "resolved", {"approved": True}), ("a", "cancelled", None),
                        ("b", "cancelled", None)), ClaimRejection.DUPLICATE_RESPONSE),
            (_responses(("a", "resolved", {"approved": "yes"}), ("b", "cancelled", None)),
             ClaimRejection.INVALID_PAYLOAD),
            (_responses(("a", "resolved", {"approved": True, "extra": 1}),
                        ("b", "cancelled", None)), ClaimRejection.INVALID_PAYLOAD),
            ([], ClaimRejection.INCOMPLETE),
        ],
    )
    async def test_try_claim_rejects_answers_that_do_not_fit_the_batch(
        self, ilog: OpenLog, responses: list[Resume], reason: ClaimRejection
    ) -> None:
        """Incomplete, unknown, duplicate or schema-violating answers claim nothing."""
        batch = await create(ilog, "acme", "t", "a", "b")
        before = await event_count(ilog)
        result = await ilog.interrupts.try_claim("acme", answer(batch, responses=responses))
        assert (None, reason, before) == (result.claim, result.reason, await event_count(ilog))

    async def test_an_invalid_payload_says_which_field_and_why(self, ilog: OpenLog) -> None:
        """The rejection's detail names the interrupt, the field and the rule it broke."""
        batch = await create(ilog, "acme", "t", "a", "b")
        result = await ilog.interrupts.try_claim("acme", answer(batch, responses=_responses(
            ("a", "resolved", {"approved": "yes"}), ("b", "cancelled", None))))
        assert (ClaimRejection.INVALID_PAYLOAD, "interrupt 'a': payload.approved: 'yes' is "
                "not of type 'boolean'") == (result.reason, result.detail)

    async def test_a_cancelled_answer_skips_the_schema(self, ilog: OpenLog) -> None:
        """A cancelled response needs no payload satisfying the response schema."""
        batch = await create(ilog)
        cancelled = [Resume(interrupt_id="approve", status="cancelled")]
        result = await ilog.interrupts.try_claim("acme", answer(batch, responses=cancelled))
        assert (None, 1) == (result.reason, result.claim.generation if result.claim else None)

    async def test_try_claim_unknown_batch_and_other_scope_are_not_found(
        self, ilog: OpenLog
    ) -> None:
        """An unknown batch id and another scope's batch look the same: not_found."""
        batch = await create(ilog, "acme")
        unknown = await ilog.interrupts.try_claim("acme", answer(batch, batch_id="no-such-batch"))
        elsewhere = await ilog.interrupts.try_claim("other", answer(batch))
        assert (ClaimRejection.NOT_FOUND, ClaimRejection.NOT_FOUND) == (
            unknown.reason, elsewhere.reason,
        )

    async def test_try_claim_on_another_thread_is_a_mismatch(self, ilog: OpenLog) -> None:
        """The answer must come on the batch's own thread."""
        batch = await create(ilog)
        result = await ilog.interrupts.try_claim("acme", answer(batch, thread_id="thread-2"))
        assert ClaimRejection.THREAD_MISMATCH == result.reason

    async def test_try_claim_after_the_deadline_is_expired(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """An answer at or after the approval deadline is refused as expired."""
        batch = await create(ilog)
        clock.now = batch.approval_expires_at
        result = await ilog.interrupts.try_claim("acme", answer(batch))
        assert ClaimRejection.EXPIRED == result.reason

    async def test_try_claim_refuses_an_untrusted_operation(self, ilog: OpenLog) -> None:
        """A store whose registry lacks the batch's operation never resumes it."""
        batch = await create(ilog)
        strict = InterruptStore(ilog, OPTIONS, operations=[Operation("payments", "2")])
        result = await strict.try_claim("acme", answer(batch))
        assert ClaimRejection.UNTRUSTED_OPERATION == result.reason

    async def test_try_claim_refuses_malformed_input_and_oversized_payloads(
        self, ilog: OpenLog
    ) -> None:
        """Shape errors are InvalidInput naming the field; an oversized payload PayloadTooLarge."""
        batch = await create(ilog)
        big = [Resume(interrupt_id="approve", status="resolved", payload={"x": "y" * 70_000})]
        bad_status = [Resume(interrupt_id="approve", status="maybe")]  # type: ignore[arg-type]
        fields = []
        for bad in (answer(batch, responses=big), answer(batch, responses=bad_status), "nope"):
            with pytest.raises(InvalidInput) as raised:
                await ilog.interrupts.try_claim("acme", bad)  # type: ignore[arg-type]
            fields.append((type(raised.value), raised.value.field))
        assert [
            (PayloadTooLarge, "resume_input.responses[0].payload"),
            (InvalidInput, "resume_input.responses[0].status"),
            (InvalidInput, "resume_input"),
        ] == fields

    async def test_tokens_never_reach_events_or_views(self, ilog: OpenLog) -> None:
        """The raw token appears nowhere in the log or the views; its digest only as recorded."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        events = [e async for e in ilog.read_stream("acme", f"interrupt-batch:{batch.batch_id}")]
        stored = b"".join(event.data for event in events)
        views = repr(await ilog.dump_views())
        assert (2, False, False, False) == (
            len(events), claim.token.encode() in stored, claim.token in views,
            claim.token in repr(claim),
        )

    # -- under a claim -------------------------------------------------------------------

    async def test_the_dispatch_marker_is_committed_once(self, ilog: OpenLog) -> None:
        """try_start_effect is True once for the current claim, then False."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        results = [await ilog.interrupts.try_start_effect(claim) for _ in range(2)]
        row = await batch_row(ilog, "acme", batch.batch_id)
        assert ([True, False], "effect_started") == (results, row["state"] if row else None)

    async def test_an_expired_lease_cannot_start_an_effect(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """After the lease runs out, the claim can no longer dispatch; nothing is appended."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        clock.now = claim.expires_at
        before = await event_count(ilog)
        assert (False, before) == (await ilog.interrupts.try_start_effect(claim),
                                   await event_count(ilog))

    async def test_release_returns_to_pending_and_retires_the_old_claim(
        self, ilog: OpenLog
    ) -> None:
        """Release, then a new claim gets generation 2; the old claim is stale everywhere."""
        batch = await create(ilog)
        store = ilog.interrupts
        old = (await store.try_claim("acme", answer(batch))).claim
        assert old is not None
        assert await store.finish(old, Finish.RELEASE)
        new = (await store.try_claim("acme", answer(batch))).claim
        assert new is not None
        row_before = await batch_row(ilog, "acme", batch.batch_id)
        before = await event_count(ilog)
        stale = (
            await store.try_start_effect(old), await store.start_capture(old),
            await store.finish(old, Finish.FINALIZE), await store.finish(old, Finish.RELEASE),
        )
        assert ((False, None, False, False), 2, new.token != old.token) == (stale, new.generation,
                                                                            True)
        assert (before, row_before) == (await event_count(ilog),
                                        await batch_row(ilog, "acme", batch.batch_id))

    async def test_release_is_refused_after_an_effect(self, ilog: OpenLog) -> None:
        """Once the effect started, the batch cannot go back to pending."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        await ilog.interrupts.try_start_effect(claim)
        assert (False, True) == (await ilog.interrupts.finish(claim, Finish.RELEASE),
                                 await ilog.interrupts.finish(claim, Finish.FINALIZE))

    async def test_a_finalized_batch_is_finished(self, ilog: OpenLog) -> None:
        """After finalize, every answer is rejected as finished."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        await ilog.interrupts.finish(claim, Finish.FINALIZE)
        again = await ilog.interrupts.try_claim("acme", answer(batch))
        assert ClaimRejection.FINISHED == again.reason

    async def test_an_expired_lease_without_effect_may_be_taken_over(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """Past the lease (no effect), a new answer claims generation 2 without a cleanup."""
        batch = await create(ilog)
        first = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert first is not None
        clock.now = first.expires_at
        second = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert (2, False) == (second.generation if second else None,
                              await ilog.interrupts.finish(first, Finish.FINALIZE))

    async def test_an_effect_whose_lease_ran_out_is_never_claimable(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """With an effect started and the lease gone, answers get unresolved_effect."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        await ilog.interrupts.try_start_effect(claim)
        clock.now = claim.expires_at
        result = await ilog.interrupts.try_claim("acme", answer(batch))
        assert (ClaimRejection.UNRESOLVED_EFFECT, False) == (
            result.reason, await ilog.interrupts.finish(claim, Finish.FINALIZE),
        )

    async def test_a_capture_completes_once_under_its_claim(self, ilog: OpenLog) -> None:
        """complete_capture records the outcome once; a second capture per claim is refused."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        handle = await ilog.interrupts.start_capture(claim)
        assert handle is not None
        results = (
            await ilog.interrupts.start_capture(claim),
            await ilog.interrupts.complete_capture(handle, "completed", "{}"),
            await ilog.interrupts.complete_capture(handle, "failed", None),
        )
        row = await batch_row(ilog, "acme", batch.batch_id)
        assert ((None, True, False), "completed") == (
            results, row["capture_state"] if row else None)

    async def test_a_stale_capture_changes_nothing(self, ilog: OpenLog, clock: FakeClock) -> None:
        """A capture of an expired claim cannot complete; the row stays byte-identical."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        handle = await ilog.interrupts.start_capture(claim)
        assert handle is not None
        clock.now = claim.expires_at
        row = await batch_row(ilog, "acme", batch.batch_id)
        assert False is await ilog.interrupts.complete_capture(handle, "completed")
        assert row == await batch_row(ilog, "acme", batch.batch_id)

    async def test_complete_capture_refuses_a_bad_outcome(self, ilog: OpenLog) -> None:
        """Only completed, failed or cancelled are outcomes a caller records."""
        batch = await create(ilog)
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        handle = await ilog.interrupts.start_capture(claim)
        assert handle is not None
        with pytest.raises(InvalidInput) as raised:
            await ilog.interrupts.complete_capture(handle, "abandoned")
        assert "outcome" == raised.value.field

    async def test_views_equal_a_rebuild_after_a_whole_flow(self, ilog: OpenLog) -> None:
        """After create, claim, capture, effect and finish the view is a function of the log."""
        await whole_flow(ilog)
        assert [] == await view_differences(ilog)

    async def test_logs_never_carry_a_token(self, ilog: OpenLog) -> None:
        """Every log entry of a claim's life is free of its token."""
        batch = await create(ilog)
        with capture_logs() as entries:
            claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
            assert claim is not None
            await ilog.interrupts.try_start_effect(claim)
            await ilog.interrupts.finish(claim, Finish.FINALIZE)
        assert (True, False) == (len(entries) >= 3, claim.token in repr(entries))
