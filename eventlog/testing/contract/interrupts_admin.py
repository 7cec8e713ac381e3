"""Contract: the interrupt store, part 2: cleanup, list, inspect, reconcile, recover (with a
fake clock)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from eventlog import CheckpointRecord, InvalidInput, OpenLog
from eventlog.interrupts import (
    BatchState,
    ClaimRejection,
    CleanupResult,
    Finish,
    InterruptClaim,
    InterruptStore,
    Operation,
    PendingBatch,
    ReconcileRejection,
    Reconciliation,
    RecoveryDisposition,
)
from eventlog.testing.contract.interrupts import InterruptsBase
from eventlog.testing.interrupts import (
    OPTIONS,
    FakeClock,
    answer,
    batch_row,
    create,
    event_count,
    view_differences,
)

APPLIED = Reconciliation(resolution="effect_applied", evidence={"provider_ref": "tx-42"},
                         note="checked the bank statement")


async def claimed(log: OpenLog, scope: str = "acme", thread: str = "thread-1"
                  ) -> tuple[PendingBatch, InterruptClaim]:
    """A batch with a live claim."""
    batch = await create(log, scope, thread)
    claim = (await log.interrupts.try_claim(scope, answer(batch))).claim
    assert claim is not None
    return batch, claim


async def state_of(log: OpenLog, batch: PendingBatch) -> str | None:
    """The batch's state in the view (None once retired)."""
    row = await batch_row(log, batch.tenant_id, batch.batch_id)
    return None if row is None else str(row["state"])


class InterruptsAdminContract(InterruptsBase):
    """Contract: the interrupt store's cleanup, list, inspect, reconcile and recover."""

    # -- cleanup -------------------------------------------------------------------------

    async def test_cleanup_does_nothing_before_anything_is_due(self, ilog: OpenLog) -> None:
        """Live claims and unexpired batches are left alone."""
        await claimed(ilog)
        await create(ilog)
        before = await event_count(ilog)
        assert (CleanupResult(), before) == (await ilog.interrupts.cleanup(),
                                             await event_count(ilog))

    async def test_cleanup_expires_leases_approvals_and_abandons_captures(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """Past every deadline: a no-effect claim goes pending (and, past its deadline too, on
        to expired in the same pass), an effect goes unresolved, an unanswered batch expires,
        and a running capture under a dead claim is abandoned."""
        plain, _ = await claimed(ilog)
        dispatched, effect_claim = await claimed(ilog)
        await ilog.interrupts.try_start_effect(effect_claim)
        capture = await ilog.interrupts.start_capture(effect_claim)
        assert capture is not None
        unanswered = await create(ilog)
        clock.advance(hours=2)
        result = await ilog.interrupts.cleanup()
        states = [await state_of(ilog, b) for b in (plain, dispatched, unanswered)]
        assert (CleanupResult(leases_expired=1, effects_unresolved=1, approvals_expired=2,
                              captures_abandoned=1),
                ["expired", "unresolved", "expired"]) == (result, states)
        assert [] == await view_differences(ilog)

    async def test_cleanup_retires_finished_batches_after_the_retention(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """A finalized batch leaves the views after audit_retention; the log keeps its events."""
        batch, claim = await claimed(ilog)
        await ilog.interrupts.finish(claim, Finish.FINALIZE)
        clock.advance(hours=23)
        early = await ilog.interrupts.cleanup()
        clock.advance(hours=1)
        late = await ilog.interrupts.cleanup()
        events = [e async for e in ilog.read_stream("acme", f"interrupt-batch:{batch.batch_id}")]
        assert (CleanupResult(), CleanupResult(retired=1), None, 4) == (
            early, late, await ilog.interrupts.inspect(["acme"], batch.batch_id), len(events),
        )

    async def test_cleanup_never_ends_an_unresolved_effect(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """An unresolved batch survives any number of passes, however old."""
        batch, claim = await claimed(ilog)
        await ilog.interrupts.try_start_effect(claim)
        clock.advance(days=1)
        await ilog.interrupts.cleanup()
        clock.advance(days=400)
        second = await ilog.interrupts.cleanup()
        assert (CleanupResult(), "unresolved") == (second, await state_of(ilog, batch))

    async def test_cleanup_handles_at_most_limit_batches_per_category(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """cleanup(limit=2) expires two of three due batches; the next pass the third."""
        batches = [await create(ilog, "acme", f"t{n}") for n in range(3)]
        clock.advance(hours=2)
        first = await ilog.interrupts.cleanup(limit=2)
        second = await ilog.interrupts.cleanup(limit=2)
        states = sorted([await state_of(ilog, b) or "" for b in batches])
        assert (2, 1, ["expired"] * 3) == (first.approvals_expired, second.approvals_expired,
                                           states)

    async def test_cleanup_refuses_a_bad_limit(self, ilog: OpenLog) -> None:
        """The limit is a whole number ≥ 1."""
        with pytest.raises(InvalidInput):
            await ilog.interrupts.cleanup(limit=0)


    # -- list ----------------------------------------------------------------------------

    async def test_list_pages_in_creation_order_with_an_opaque_cursor(self, ilog: OpenLog) -> None:
        """Pages of two follow creation order; the last page has no cursor."""
        created = [(await create(ilog, "acme", f"t{n}")).batch_id for n in range(5)]
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await ilog.interrupts.list(["acme"], limit=2, cursor=cursor)
            seen += [b.batch_id for b in page.batches]
            pages += 1
            cursor = page.cursor
            if cursor is None:
                break
        assert (created, 3) == (seen, pages)

    async def test_list_stays_within_the_permitted_scopes(self, ilog: OpenLog) -> None:
        """Only the permitted scopes' batches are listed, from several scopes at once."""
        a = await create(ilog, "acme")
        b = await create(ilog, "beta")
        await create(ilog, "gamma")
        page = await ilog.interrupts.list(["acme", "beta"])
        assert {a.batch_id, b.batch_id} == {x.batch_id for x in page.batches}

    async def test_list_filters_by_state(self, ilog: OpenLog) -> None:
        """state= lists only the batches in that state."""
        batch, _ = await claimed(ilog)
        await create(ilog)
        page = await ilog.interrupts.list(["acme"], state="claimed")
        assert [batch.batch_id] == [b.batch_id for b in page.batches]

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            ({"scopes": []}, "scopes"),
            ({"scopes": "acme"}, "scopes"),
            ({"scopes": ["acme"], "limit": 0}, "limit"),
            ({"scopes": ["acme"], "cursor": "garbage"}, "cursor"),
            ({"scopes": ["acme"], "state": "sleeping"}, "state"),
        ],
    )
    async def test_list_refuses_bad_arguments(self, ilog: OpenLog, kwargs: dict[str, object],
                                              field: str) -> None:
        """Empty scopes, a bare string, bad limits, cursors and states name their field."""
        with pytest.raises(InvalidInput) as raised:
            await ilog.interrupts.list(**kwargs)  # type: ignore[arg-type]
        assert field == raised.value.field


    # -- inspect -------------------------------------------------------------------------

    async def test_inspect_shows_metadata_and_a_paged_audit_trail(self, ilog: OpenLog) -> None:
        """inspect pages the batch's events in order and never shows a token or its digest."""
        batch, claim = await claimed(ilog)
        await ilog.interrupts.try_start_effect(claim)
        await ilog.interrupts.finish(claim, Finish.FINALIZE)
        first = await ilog.interrupts.inspect(["acme"], batch.batch_id, limit=3)
        assert first is not None
        rest = await ilog.interrupts.inspect(["acme"], batch.batch_id, limit=3, cursor=first.cursor)
        assert rest is not None
        types = [e.type for e in first.audit + rest.audit]
        text = repr(first) + repr(rest)
        assert (["interrupt.batch_created", "interrupt.batch_claimed", "interrupt.effect_started",
                 "interrupt.batch_finalized"], None, BatchState.FINALIZED, False, False) == (
            types, rest.cursor, first.batch.state, claim.token in text, "token_digest" in text,
        )

    async def test_inspect_outside_the_scopes_is_none(self, ilog: OpenLog) -> None:
        """Another scope's batch and an unknown id both inspect as None."""
        batch = await create(ilog, "acme")
        assert (None, None) == (await ilog.interrupts.inspect(["beta"], batch.batch_id),
                                await ilog.interrupts.inspect(["acme"], "no-such-batch"))


    # -- reconcile -----------------------------------------------------------------------

    async def test_reconcile_records_the_ruling_and_retires_all_authority(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """An unresolved batch is reconciled: actor and evidence recorded, claims dead forever."""
        batch, claim = await claimed(ilog)
        await ilog.interrupts.try_start_effect(claim)
        clock.now = claim.expires_at
        await ilog.interrupts.cleanup()
        result = await ilog.interrupts.reconcile(["acme"], batch.batch_id, "ops@acme", APPLIED)
        inspected = await ilog.interrupts.inspect(["acme"], batch.batch_id)
        assert inspected is not None
        last = inspected.audit[-1]
        again = await ilog.interrupts.try_claim("acme", answer(batch))
        assert (True, "ops@acme", {"provider_ref": "tx-42"}, "reconciled",
                ClaimRejection.FINISHED) == (
            result.recorded, last.details["actor"], last.details["evidence"],
            inspected.batch.state.value, again.reason,
        )

    async def test_reconcile_during_a_live_claim_ends_it(self, ilog: OpenLog) -> None:
        """Reconciling while a claim is live makes that claim stale: no dispatch afterwards."""
        batch, claim = await claimed(ilog)
        abandon = Reconciliation(resolution="abandoned", evidence={})
        result = await ilog.interrupts.reconcile(["acme"], batch.batch_id, "ops", abandon)
        assert (True, False, False) == (
            result.recorded, await ilog.interrupts.try_start_effect(claim),
            await ilog.interrupts.finish(claim, Finish.FINALIZE),
        )

    @pytest.mark.parametrize(
        ("scopes", "ruling", "reason"),
        [
            (["beta"], APPLIED, ReconcileRejection.NOT_FOUND),
            (["acme"], APPLIED, ReconcileRejection.NO_EFFECT),
            (["acme"], Reconciliation(resolution="abandoned", evidence={}, expected_version=1),
             ReconcileRejection.CHANGED),
        ],
    )
    async def test_reconcile_rejections_write_nothing(
        self, ilog: OpenLog, scopes: list[str], ruling: Reconciliation, reason: ReconcileRejection
    ) -> None:
        """Outside the scopes, effect rulings without an effect, and outdated versions."""
        batch, _ = await claimed(ilog)
        before = await event_count(ilog)
        result = await ilog.interrupts.reconcile(scopes, batch.batch_id, "ops", ruling)
        assert (False, reason, before) == (result.recorded, result.reason, await event_count(ilog))

    async def test_reconcile_of_a_finished_batch_is_refused(self, ilog: OpenLog) -> None:
        """A finalized batch is finished: nothing more to rule on."""
        batch, claim = await claimed(ilog)
        await ilog.interrupts.finish(claim, Finish.FINALIZE)
        abandon = Reconciliation(resolution="abandoned", evidence={})
        result = await ilog.interrupts.reconcile(["acme"], batch.batch_id, "ops", abandon)
        assert ReconcileRejection.FINISHED == result.reason

    async def test_reconcile_refuses_bad_input(self, ilog: OpenLog) -> None:
        """Empty scopes, an empty actor and non-JSON evidence are refused by field."""
        batch = await create(ilog)
        fields = []
        for scopes, actor, ruling in (
            ([], "ops", APPLIED),
            (["acme"], "", APPLIED),
            (["acme"], "ops", Reconciliation(resolution="abandoned", evidence={"x": object()})),
        ):
            with pytest.raises(InvalidInput) as raised:
                await ilog.interrupts.reconcile(scopes, batch.batch_id, actor, ruling)
            fields.append(raised.value.field)
        assert ["scopes", "actor", "reconciliation.evidence"] == fields


    # -- recover -------------------------------------------------------------------------

    async def test_recover_reports_the_open_batch_without_claiming(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """recover reads the thread's open batch and its disposition, appending nothing."""
        batch = await create(ilog, "acme", "thread-9")
        before = await event_count(ilog)
        waiting = await ilog.interrupts.recover("acme", "thread-9")
        claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
        assert claim is not None
        working = await ilog.interrupts.recover("acme", "thread-9")
        await ilog.interrupts.try_start_effect(claim)
        clock.now = claim.expires_at
        lost = await ilog.interrupts.recover("acme", "thread-9")
        nothing = await ilog.interrupts.recover("acme", "thread-0")
        assert (
            [RecoveryDisposition.AWAITING_RESPONSE, RecoveryDisposition.IN_PROGRESS,
             RecoveryDisposition.UNRESOLVED, RecoveryDisposition.NO_OPEN_BATCH],
            batch.batch_id, before,
        ) == (
            [r.disposition for r in (waiting, working, lost, nothing)],
            waiting.batch.batch_id if waiting.batch else None, before,
        )

    async def test_recover_refuses_an_untrusted_operation(self, ilog: OpenLog) -> None:
        """A batch of an operation the registry lacks: no checkpoint, disposition untrusted."""
        await create(ilog, "acme", "thread-9")
        strict = InterruptStore(ilog, OPTIONS, operations=[Operation("other", "1")])
        recovery = await strict.recover("acme", "thread-9")
        assert (RecoveryDisposition.UNTRUSTED_OPERATION, None) == (recovery.disposition,
                                                                   recovery.checkpoint)

    async def test_timeouts_use_the_configured_options(
        self, ilog: OpenLog, clock: FakeClock
    ) -> None:
        """Just before the lease ends the claim is live; at its end cleanup expires it."""
        _, claim = await claimed(ilog)
        clock.advance(seconds=OPTIONS.preparation_lease.total_seconds() - 1)
        early = await ilog.interrupts.cleanup()
        clock.advance(seconds=1)
        late = await ilog.interrupts.cleanup()
        assert (0, 1, timedelta(0)) == (early.leases_expired, late.leases_expired,
                                        clock.now - claim.expires_at)

    async def test_recover_returns_the_threads_latest_checkpoint(self, ilog: OpenLog) -> None:
        """The thread is the checkpoint session: recover hands back its newest record."""
        run = uuid.uuid4()
        for step in (1, 2):
            await ilog.checkpoints.create(CheckpointRecord(
                tenant_id="acme", session_id="thread-9", run_id=run, checkpoint_id=f"cp-{step}",
                step=step, state={"step": step},
            ))
        batch = await create(ilog, "acme", "thread-9")
        recovery = await ilog.interrupts.recover("acme", "thread-9")
        elsewhere = await ilog.interrupts.recover("beta", "thread-9")
        assert ("cp-2", batch.batch_id, None, None) == (
            recovery.checkpoint.checkpoint_id if recovery.checkpoint else None,
            recovery.batch.batch_id if recovery.batch else None,
            elsewhere.checkpoint, elsewhere.batch,
        )
