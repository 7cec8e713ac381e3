"""Contract: who decided. An interrupt batch's claims, resumes and rulings record the
principal who acted, in each event's envelope, and inspect's audit trail shows it."""

from __future__ import annotations

from eventlog import OpenLog
from eventlog.events.interrupts import batch_stream
from eventlog.interrupts import Finish, Reconciliation
from eventlog.testing.contract.interrupts import InterruptsBase
from eventlog.testing.interrupts import answer, create


async def _trail(log: OpenLog, tenant_id: str, batch_id: str) -> list[tuple[str, str | None]]:
    return [(event.type, event.actor)
            async for event in log.read_stream(tenant_id, batch_stream(batch_id))]


class InterruptsActorContract(InterruptsBase):
    """Contract: claims, resumes and reconciliations record the actor who decided."""

    async def test_a_claim_and_its_resume_record_who_approved(self, ilog: OpenLog) -> None:
        """A batch raised by the service, claimed and finished by alice inside `acting_as`:
        each event names who appended it, and inspect's audit trail says the same."""
        with ilog.acting_as("svc"):
            batch = await create(ilog)
        with ilog.acting_as("alice"):
            claim = (await ilog.interrupts.try_claim("acme", answer(batch))).claim
            assert claim is not None
            assert await ilog.interrupts.finish(claim, Finish.FINALIZE)
        trail = await _trail(ilog, "acme", batch.batch_id)
        assert [("interrupt.batch_created", "svc"), ("interrupt.batch_claimed", "alice"),
                ("interrupt.batch_finalized", "alice")] == trail
        inspection = await ilog.interrupts.inspect(["acme"], batch.batch_id)
        assert inspection is not None
        assert [actor for _, actor in trail] == [entry.actor for entry in inspection.audit]

    async def test_a_ruling_is_appended_by_the_operator_it_names(self, ilog: OpenLog) -> None:
        """reconcile's ``actor`` is its event's envelope actor too, whoever the log or an
        enclosing block acts as: who decided is who acted."""
        batch = await create(ilog)
        with ilog.acting_as("svc"):
            result = await ilog.interrupts.reconcile(
                ["acme"], batch.batch_id, "ops@acme",
                Reconciliation(resolution="abandoned", evidence={"ticket": "T-1"}))
        assert result.recorded
        recorded = [event async for event in ilog.read_stream(
            "acme", batch_stream(batch.batch_id))][-1]
        assert ("interrupt.batch_reconciled", "ops@acme", "ops@acme") == (
            recorded.type, recorded.actor, recorded.event.actor)  # type: ignore[attr-defined]
        assert None is ilog.acting_block
