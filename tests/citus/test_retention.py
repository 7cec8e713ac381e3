"""Retention on the Citus cluster: a pass's batches (tombstones of many streams and the
retention stream's event in one transaction) and holds, on a log distributed by tenant."""

from __future__ import annotations

import pytest

from eventlog import open_log
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.interrupts import FakeClock, create
from tests.citus import cluster

pytestmark = pytest.mark.citus


async def test_a_pass_with_a_hold_and_an_open_batch(citus_schema: str) -> None:
    """keep_latest=1 over three sessions: one held, one with a pending approval, one
    purged in small batches; the log verifies."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        clock=FakeClock()) as log:
        for session in ("held", "thread-1", "free"):
            for n in range(4):
                await log.checkpoints.create(record(session, {"n": n},
                                                    checkpoint_id=f"{session}-{n}"))
        await log.retention.hold("t", "held", reason="audit")
        await create(log, "t", "thread-1")
        report = await log.retention.apply("t", keep_latest=1, batch_size=2)
        lengths = [len(await log.checkpoints.list("t", s)) for s in ("held", "thread-1", "free")]
        assert ([4, 4, 1], ["held"], ["thread-1"], 3, 2) == (
            lengths, report.held, report.open_batches, report.checkpoints, report.batches)
        assert (await log.verify()).ok
