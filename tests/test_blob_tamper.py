"""Tampering with state blobs is found: verify hashes every referenced blob and checks its
reference count against the events, and a read never serves forged state."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import msgspec
import pytest

from eventlog import CheckpointRecord, CorruptBlob, content_digest, open_log
from tests.conftest import BackendTarget
from tests.test_tamper import sql

every_store = pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)
sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)

SHARED = {"pay_to": "ACME", "cents": 1250}
FORGED = b'{"pay_to":"EVIL","cents":999999}'


async def build(target: BackendTarget) -> dict[str, str]:
    """Sessions s1 and s2 share one state (two references); s3 has its own and is deleted;
    s4 holds a state. Returns checkpoint ids by session."""
    ids = {}
    async with open_log(target.url, **target.options()) as log:
        for session, state in (("s1", SHARED), ("s2", SHARED), ("s3", {"x": 1}),
                               ("s4", {"y": 2})):
            record = await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=session, run_id=uuid.uuid4(), state=state))
            assert record.checkpoint_id is not None
            ids[session] = record.checkpoint_id
        assert 1 == await log.checkpoints.delete("t", "s3")
        assert (await log.verify()).ok
    return ids


def shared_digest() -> bytes:
    """The digest the shared state is stored under (its JSON encoding)."""
    return content_digest(msgspec.json.encode(SHARED))


def blob_file(target: BackendTarget, digest: bytes) -> Path:
    """Where the file store keeps tenant t's blob."""
    root = Path(target.url.removeprefix("file://"))
    return root / "blobs" / hashlib.sha256(b"t").hexdigest() / digest.hex()


async def findings(target: BackendTarget) -> list[tuple[str, str]]:
    """Reopen and verify: each blob problem as (stream, kind)."""
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
    return [(p.stream_id, p.kind) for p in report.problems]


@every_store
async def test_forged_state_bytes_are_a_finding_and_never_served(target: BackendTarget) -> None:
    """Rewritten blob bytes: verify reports blob_corrupt; read raises CorruptBlob."""
    ids = await build(target)
    digest = shared_digest()
    if target.name == "file":
        blob_file(target, digest).write_bytes(FORGED)
    else:
        await sql(target, "UPDATE blobs SET data = $1 WHERE digest = $2", FORGED, digest)
    assert [("session:s1", "blob_corrupt")] == await findings(target)
    async with open_log(target.url, **target.options()) as log:
        with pytest.raises(CorruptBlob) as raised:
            await log.checkpoints.read("t", "s1", ids["s1"])
    assert digest == raised.value.digest


@every_store
async def test_a_deleted_blob_is_a_finding(target: BackendTarget) -> None:
    """A blob removed behind the log's back: blob_missing, naming a session that uses it."""
    await build(target)
    digest = shared_digest()
    if target.name == "file":
        blob_file(target, digest).unlink()
    else:
        await sql(target, "DELETE FROM blobs WHERE digest = $1", digest)
    assert [("session:s1", "blob_missing")] == await findings(target)


@sql_stores
async def test_an_undercounted_blob_is_a_finding(target: BackendTarget) -> None:
    """A count lower than the events' references (a later delete would purge state another
    session still reads): blob_refs."""
    await build(target)
    await sql(target, "UPDATE blobs SET refs = 1 WHERE digest = $1", shared_digest())
    assert [("session:s1", "blob_refs")] == await findings(target)


@every_store
async def test_deleting_one_of_two_sessions_keeps_the_shared_blob_counted(
    target: BackendTarget,
) -> None:
    """After deleting s1, s2 still reads the shared state and verify stays ok."""
    ids = await build(target)
    async with open_log(target.url, **target.options()) as log:
        assert 1 == await log.checkpoints.delete("t", "s1")
        assert SHARED == await log.checkpoints.read("t", "s2", ids["s2"])
        assert (await log.verify()).ok
