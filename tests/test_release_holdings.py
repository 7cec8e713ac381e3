"""A stream releases only the blob references its own events hold (issue 21, item 1).

The attack: a genuine export of a scratch log whose one stream is a session tombstone
naming another session's state digest as released. Importing it purged the victim's
state (verify then reported ``blob_missing``). Now the import is refused before anything
is written, on every backend, and the log refuses the same release from its public API.
"""

from __future__ import annotations

import asyncio
import io
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, EventLog, ReleaseNotHeld, open_log
from eventlog.events.checkpoints import CheckpointCreated, SessionDeleted
from eventlog.events.threads import ThreadDeleted
from eventlog.transfer import export_log, import_log
from tests.cli.helpers import make_runner
from tests.conftest import BackendTarget

STATE = {"pay_to": "ACME", "cents": 1250}


async def create_victim(log: EventLog) -> tuple[str, bytes]:
    """The victim session's checkpoint id and its state digest."""
    record = await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="victim", run_id=uuid.uuid4(), state=STATE))
    assert record.checkpoint_id is not None
    (created,) = [event.event async for event in log.read_stream("t", "session:victim")]
    assert isinstance(created, CheckpointCreated)
    return record.checkpoint_id, bytes.fromhex(created.state_digest)


async def tombstone_export(digest: bytes, *, thread: bool = False) -> io.BytesIO:
    """A genuine export of a scratch log holding one tombstone stream (a session's, or a
    thread's) that names ``digest`` as released."""
    async with open_log("memory://") as scratch:
        if thread:
            await scratch.append("t", "thread:evil", [ThreadDeleted(
                thread_id="evil", checkpoints=1, released={digest.hex(): 1})])
        else:
            await scratch.append("t", "session:evil", [SessionDeleted(
                session_id="evil", checkpoints=1, released={digest.hex(): 1})])
        sink = io.BytesIO()
        await export_log(scratch, sink, tenant_id="t")
    sink.seek(0)
    return sink


async def test_an_import_releasing_another_sessions_state_is_refused(
    target: BackendTarget,
) -> None:
    """Importing a tombstone stream that releases a victim session's state raises
    ReleaseNotHeld naming the tombstone's stream and the victim's digest."""
    async with target.open() as log:
        _, digest = await create_victim(log)
        with pytest.raises(ReleaseNotHeld) as refused:
            await import_log(log, await tombstone_export(digest))
    assert ("session:evil", digest) == (refused.value.stream_id, refused.value.digest)


async def test_a_refused_import_leaves_the_victim_whole(target: BackendTarget) -> None:
    """After the refused import the victim's state reads back, nothing of the file was
    written, and verify is clean."""
    async with target.open() as log:
        checkpoint_id, digest = await create_victim(log)
        with pytest.raises(ReleaseNotHeld):
            await import_log(log, await tombstone_export(digest))
        assert (STATE, None, []) == (
            await log.checkpoints.read("t", "victim", checkpoint_id),
            await log.stream_head("t", "session:evil"),
            (await log.verify()).problems,
        )


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_a_thread_tombstone_releasing_a_session_state_is_refused(
    target: BackendTarget,
) -> None:
    """A thread_deleted tombstone naming a session's state is refused the same way."""
    async with target.open() as log:
        _, digest = await create_victim(log)
        with pytest.raises(ReleaseNotHeld):
            await import_log(log, await tombstone_export(digest, thread=True))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_append_recorded_refuses_a_release_its_streams_do_not_hold(
    target: BackendTarget,
) -> None:
    """The log itself refuses an import's release that the imported streams do not hold
    (append_recorded, the import's own path), writing nothing."""
    async with open_log("memory://") as scratch, target.open() as log:
        checkpoint_id, digest = await create_victim(log)
        await scratch.append("t", "session:evil", [SessionDeleted(
            session_id="evil", checkpoints=1, released={digest.hex(): 1})])
        recorded = await scratch.storage.read_stream("t", "session:evil", 1, 10)
        with pytest.raises(ReleaseNotHeld):
            await log.append_recorded("t", recorded, release={digest: 1})
        assert (STATE, None) == (await log.checkpoints.read("t", "victim", checkpoint_id),
                                 await log.stream_head("t", "session:evil"))


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_the_import_command_refuses_the_file_with_exit_2(
    target: BackendTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``eventlog import`` of such a file exits 2 naming the digest."""
    async def prepare() -> bytes:
        async with target.open() as log:
            _, digest = await create_victim(log)
        path.write_bytes((await tombstone_export(digest)).getvalue())
        return digest

    path = tmp_path / "evil.jsonl"
    digest = asyncio.run(prepare())
    ran = make_runner(capsys, target)("import", str(path))
    assert (2, True) == (ran.status, digest.hex() in ran.err)


async def test_session_delete_after_import_releases_what_it_holds(tmp_path: Path) -> None:
    """A session deleted at the source imports (its tombstone releases what its stream
    holds) and a later delete in the copy purges only its own state."""
    async with open_log(f"sqlite:///{tmp_path / 'a.db'}") as source, \
            open_log(f"sqlite:///{tmp_path / 'b.db'}") as copy:
        checkpoint_id, _ = await create_victim(source)
        await source.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="gone", run_id=uuid.uuid4(), state=STATE))
        await source.checkpoints.delete("t", "gone")
        sink = io.BytesIO()
        await export_log(source, sink, tenant_id="t")
        sink.seek(0)
        await import_log(copy, sink)
        assert (STATE, []) == (await copy.checkpoints.read("t", "victim", checkpoint_id),
                               (await copy.verify()).problems)
