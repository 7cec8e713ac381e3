"""An encrypted log on Citus (issue 32): the subject keys are distributed with the tenant,
states are sealed, an erasure destroys the key on the tenant's worker, verify holds."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.crypto import init_keyring
from eventlog.errors import SubjectErased
from tests.citus import cluster

pytestmark = pytest.mark.citus


async def test_an_encrypted_tenant_reads_erases_and_verifies(
        citus_schema: str, tmp_path: Path) -> None:
    """Create and read under a keyring, erase, the read refused, the records listed,
    verify whole; no marker in the events' or blobs' bytes."""
    keyring = init_keyring(tmp_path / "keyring.json")
    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        keyring=keyring) as log:
        created = await log.checkpoints.create(CheckpointRecord(
            tenant_id="acme", session_id="s1", run_id=uuid.uuid4(),
            state={"secret": "MARKER-CITUS"}, metadata={"m": "MARKER-CITUS"}))
        read = await log.checkpoints.read("acme", "s1", created.checkpoint_id or "")
        blobs = await log.storage.get_blobs("acme", list(await log.blob_refs("acme")))
        events = (await log.read_all()).events
        await log.erase("acme", "s1", reason="test")
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("acme", "s1", created.checkpoint_id or "")
        assert ({"secret": "MARKER-CITUS"}, False, 1, True) == (
            read, any(b"MARKER" in data for data in [*blobs.values(),
                                                      *(e.data for e in events)]),
            len(await log.checkpoints.list("acme", "s1")), (await log.verify()).ok)
