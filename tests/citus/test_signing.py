"""Signed appends on the Citus cluster (issue 40 §1): the retention stream's tables are
distributed by tenant; a hold release the DBA inserts on the coordinator with SQL, chained
and with its head row bumped, is refused by the hold list and a retention pass, and named
by verify with the writer's public key alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import ForgedEvent, open_log
from eventlog.crypto import init_keyring
from eventlog.events.retention import RETENTION_STREAM, LegalHoldReleased
from eventlog.testing.contract.checkpoints import record
from tests.citus import cluster
from tests.conftest import BackendTarget
from tests.signing_outside import forge, signature_of

pytestmark = pytest.mark.citus


async def test_a_forged_hold_release_is_refused_on_the_cluster(citus_schema: str,
                                                               tmp_path: Path) -> None:
    """Every event is signed on the cluster; the forged ``legal_hold_released`` makes the
    hold list and a pass refuse (ForgedEvent, unsigned) and purges nothing; verify given
    only the public key names it."""
    keyring = init_keyring(tmp_path / "keyring.json")
    target = BackendTarget("postgresql", f"{cluster.URL}&distributed=true", citus_schema,
                           keyring=str(keyring.path))
    async with target.open() as log:
        for n in range(3):
            await log.checkpoints.create(record("held", {"n": n}, checkpoint_id=f"c{n}"))
        await log.retention.hold("t", "held", reason="audit")
        assert log.writer_keys is not None
        public = log.writer_keys.public_keys()
    assert await signature_of(target, "t", RETENTION_STREAM, 1) is not None
    version = await forge(target, "t", RETENTION_STREAM, LegalHoldReleased(subject="held"))
    async with target.open() as log:
        with pytest.raises(ForgedEvent) as listed:
            await log.retention.holds("t")
        with pytest.raises(ForgedEvent):
            await log.retention.apply("t", keep_latest=1)
        kept = len(await log.checkpoints.list("t", "held"))
    async with open_log(target.url, schema=citus_schema, writer_keys=public) as log:
        report = await log.verify("t")
    assert ((RETENTION_STREAM, version, "unsigned"), 3,
            [(RETENTION_STREAM, "unsigned", version)]) == (
        (listed.value.stream_id, listed.value.version, listed.value.reason), kept,
        [(p.stream_id, p.kind, p.version) for p in report.problems])
