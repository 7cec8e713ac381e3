"""Retention and reads that trust only the log (issue 40 §3): the database administrator's
edits, made with SQL from outside the library on a real SQLite file and the PostgreSQL
server, of the rows retention, a sealed view read and the transparency tree used to
believe. Each is refused or ignored in favour of the log's own (signed) events.
"""

from __future__ import annotations

import pytest

from eventlog import ForgedEvent
from eventlog.events.interrupts import BatchFinalized, batch_stream
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.interrupts import create
from tests.conftest import BackendTarget
from tests.signing_outside import forge, rows

stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)


async def _sessions(target: BackendTarget, *names: str, count: int = 3) -> None:
    async with target.open() as log:
        for name in names:
            for n in range(count):
                await log.checkpoints.create(record(name, {"s": name, "n": n},
                                                    checkpoint_id=f"{name}-{n}",
                                                    tenant_id="t"))


# -- 1. retention decides what protects a session from the log ----------------------------

@stores
async def test_a_pending_batch_the_dba_marked_expired_still_keeps_its_session(
    target: BackendTarget,
) -> None:
    """The DBA sets a pending batch's ``interrupt_batches`` row to ``expired`` (and
    another's row away altogether): the pass still finds both batches open in their
    streams and purges nothing of their sessions; the free session is purged."""
    await _sessions(target, "waiting", "gone-row", "free")
    async with target.open() as log:
        await create(log, "t", "waiting")
        await create(log, "t", "gone-row")
    await rows(target, "UPDATE interrupt_batches SET state = 'expired' WHERE tenant_id = $1 "
                       "AND thread_id = $2", "t", "waiting")
    await rows(target, "DELETE FROM interrupt_batches WHERE tenant_id = $1 AND thread_id = $2",
               "t", "gone-row")
    async with target.open() as log:
        report = await log.retention.apply("t", keep_latest=1)
        kept = [len(await log.checkpoints.list("t", s)) for s in ("waiting", "gone-row", "free")]
    assert ([3, 3, 1], ["gone-row", "waiting"]) == (kept, sorted(report.open_batches))


@stores
async def test_a_finished_batch_lets_its_session_go(target: BackendTarget) -> None:
    """The other way round: a batch its events end (finalized) keeps nothing, whatever
    its row says (the DBA set it back to ``pending``)."""
    await _sessions(target, "done")
    async with target.open() as log:
        batch = await create(log, "t", "done")
        await log.append("t", batch_stream(batch.batch_id),
                         [BatchFinalized(batch_id=batch.batch_id, generation=0)])
    await rows(target, "UPDATE interrupt_batches SET state = 'pending' WHERE tenant_id = $1",
               "t")
    async with target.open() as log:
        report = await log.retention.apply("t", keep_latest=1)
        kept = len(await log.checkpoints.list("t", "done"))
    assert (1, []) == (kept, report.open_batches)


@signed_stores
async def test_a_forged_batch_event_refuses_the_pass(target: BackendTarget) -> None:
    """A correctly chained ``batch_finalized`` the DBA appended to a pending batch's
    stream (signed logs): the pass refuses with ForgedEvent naming that stream, and
    purges nothing."""
    await _sessions(target, "waiting")
    async with target.open() as log:
        batch = await create(log, "t", "waiting")
    stream = batch_stream(batch.batch_id)
    version = await forge(target, "t", stream,
                          BatchFinalized(batch_id=batch.batch_id, generation=0))
    async with target.open() as log:
        with pytest.raises(ForgedEvent) as refused:
            await log.retention.apply("t", keep_latest=1)
        kept = len(await log.checkpoints.list("t", "waiting"))
    assert ((stream, version, "unsigned"), 3) == (
        (refused.value.stream_id, refused.value.version, refused.value.reason), kept)
