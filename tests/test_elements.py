"""Growing values stored element by element (`eventlog.checkpoints.elements`), on every
backend: each element stored once, the manifest a delta, reads give the list back, a
removed base is survived, copies and exports carry elements, tampering is found."""

from __future__ import annotations

import io

import pytest

from eventlog import open_log
from eventlog.checkpoints import ChannelValue, Payload, elements
from eventlog.checkpoints.elements import ELEMENTS_ENCODING, MAX_CHAIN, decode_manifest
from eventlog.checkpoints.thread_records import Elements
from eventlog.events.threads import ThreadCheckpointPut
from eventlog.hashing import content_digest
from eventlog.transfer import export_log, import_log
from tests.conftest import SEALED_SQLITE, BackendTarget
from tests.test_tamper import sql

every_backend = pytest.mark.parametrize("target", ["memory", "file", "sqlite", "postgresql"],
                                        indirect=True)
T = "t"


def message(n: int) -> bytes:
    return f"message {n} ".encode() * 50


def chat(length: int) -> Elements:
    return Elements(tuple(Payload("b", message(n)) for n in range(length)))


async def grow(log: object, thread: str, steps: int, start: int = 0) -> None:
    store = log.checkpoints.threads  # type: ignore[attr-defined]
    for step in range(start, start + steps):
        await store.put(T, thread, f"c{step:04}", state=Payload("b", b"s"),
                        channels={"messages": ChannelValue(f"v{step:04}", chat(step + 1)),
                                  "status": ChannelValue(f"v{step:04}", Payload("b", b"ok"))},
                        run_key=f"run{step // 10}")


async def puts(log: object, thread: str) -> list[ThreadCheckpointPut]:
    return [recorded.event async for recorded in log.read_stream(  # type: ignore[attr-defined]
        T, f"thread:{thread}") if isinstance(recorded.event, ThreadCheckpointPut)]


@every_backend
async def test_each_element_is_stored_once_and_every_checkpoint_reads_whole(
    target: BackendTarget,
) -> None:
    """Thirty puts of a list growing by one: each element blob held once, each manifest a
    delta adding one element, every checkpoint reads its whole list, verify holds."""
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", 30)
        refs = await log.blob_refs(T)
        assert all(1 == refs[content_digest(message(n))] for n in range(30))
        events = await puts(log, "chat")
        channel = next(ref for ref in events[-1].channels if ref.name == "messages")
        assert ELEMENTS_ENCODING == channel.encoding
        assert [content_digest(message(29)).hex()] == channel.elements
        assert "v0028" == channel.base
        for step in range(30):
            found = await log.checkpoints.threads.get(T, "chat", f"c{step:04}")
            assert found is not None
            assert found.channels is not None
            assert chat(step + 1) == found.channels["messages"]
            assert Payload("b", b"ok") == found.channels["status"]
        assert (await log.verify()).ok


@every_backend
async def test_a_full_manifest_bounds_every_chain(target: BackendTarget) -> None:
    """No manifest rests on more than MAX_CHAIN others: a full one starts a new chain."""
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", MAX_CHAIN + 3)
        blobs = await log.get_blobs(T, [bytes.fromhex(ref.digest)
                                        for put in await puts(log, "chat")
                                        for ref in put.channels if ref.name == "messages"])
        chains = [len(found.chain) for data in blobs.values()
                  if (found := decode_manifest(data)) is not None]
        assert MAX_CHAIN == max(chains)
        assert 2 == chains.count(0)


@every_backend
async def test_prune_keeps_the_chain_the_latest_rests_on_and_releases_the_rest(
    target: BackendTarget,
) -> None:
    """Prune to the latest: it still reads whole (its chain kept, with a list replaced on
    it); once a full manifest starts a new chain, the next prune releases that list."""
    replaced = content_digest(b"replaced away")
    async with open_log(target.url, **target.options()) as log:
        store = log.checkpoints.threads
        await store.put(T, "chat", "c0000", state=Payload("b", b"s"),
                        channels={"messages": ChannelValue("old", Elements((
                            Payload("b", b"replaced away"),)))})
        await grow(log, "chat", 12, start=1)
        assert 12 == await store.prune(T, "chat", keep_latest=1)
        found = await store.get(T, "chat")
        assert found is not None
        assert found.channels is not None
        assert chat(13) == found.channels["messages"]
        assert replaced in await log.blob_refs(T)  # the latest's chain rests on it
        await grow(log, "chat", MAX_CHAIN + 1, start=13)
        await store.prune(T, "chat", keep_latest=1)
        latest = await store.get(T, "chat")
        assert latest is not None
        assert latest.channels is not None
        assert chat(MAX_CHAIN + 14) == latest.channels["messages"]
        assert replaced not in await log.blob_refs(T)
        assert (await log.verify()).ok


@every_backend
async def test_a_delta_on_a_removed_base_is_put_in_full(target: BackendTarget) -> None:
    """A base removed behind this store's back (another process's prune): the delta is
    refused inside the append and the put stored as a full manifest instead."""
    async with open_log(target.url, **target.options()) as log:
        store = log.checkpoints.threads
        await grow(log, "chat", 3)
        await store.delete_thread(T, "chat")
        await grow(log, "chat", 1, start=3)  # this store still remembers v0002
        found = await store.get(T, "chat")
        assert found is not None
        assert found.channels is not None
        assert chat(4) == found.channels["messages"]
        last = (await puts(log, "chat"))[-1]
        assert "" == next(ref for ref in last.channels if ref.name == "messages").base
        assert (await log.verify()).ok


@every_backend
async def test_a_copy_reads_whole_after_its_source_is_deleted(target: BackendTarget) -> None:
    """Copy, delete the source: every copied checkpoint and write reads whole; verify."""
    async with open_log(target.url, **target.options()) as log:
        store = log.checkpoints.threads
        await grow(log, "chat", 8)
        await store.put_writes(T, "chat", "c0007", "task", [(0, "messages", chat(2))])
        await store.copy_thread(T, "chat", "copy")
        await store.delete_thread(T, "chat")
        for step in range(8):
            found = await store.get(T, "copy", f"c{step:04}")
            assert found is not None
            assert found.channels is not None
            assert chat(step + 1) == found.channels["messages"]
        assert [chat(2)] == [write.value for write in found.writes or []]
        assert (await log.verify()).ok


@every_backend
async def test_export_and_import_carry_every_element(target: BackendTarget) -> None:
    """An exported thread imported into an empty log reads whole and verifies."""
    sink = io.BytesIO()
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", 6)
        await export_log(log, sink, tenant_id=T)
    sink.seek(0)
    async with open_log("memory://") as other:
        await import_log(other, sink)
        found = await other.checkpoints.threads.get(T, "chat")
        assert found is not None
        assert found.channels is not None
        assert chat(6) == found.channels["messages"]
        assert (await other.verify()).ok


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_tampered_element_is_found_by_verify(target: BackendTarget) -> None:
    """Rewriting one element's bytes in the blobs table: verify reports blob_corrupt."""
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", 4)
    await sql(target, "UPDATE blobs SET data = $1 WHERE digest = $2", b"forged",
              content_digest(message(2)))
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
    assert [("thread:chat", "blob_corrupt")] == [(p.stream_id, p.kind) for p in report.problems]


async def test_elements_are_checked_before_anything_is_written() -> None:
    """An element that is not a Payload is refused naming it; nothing is appended."""
    async with open_log("memory://") as log:
        with pytest.raises(Exception, match=r"channels\['messages'\]\.value\[1\]"):
            await log.checkpoints.threads.put(
                T, "chat", "c1", state=Payload("b", b"s"),
                channels={"messages": ChannelValue("v1", Elements((
                    Payload("b", b"ok"), b"not a payload")))})  # type: ignore[arg-type]
        assert [] == [event async for event in log.read_stream(T, "thread:chat")]


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", SEALED_SQLITE],
                         indirect=True)
async def test_the_latest_checkpoint_after_a_put_decodes_no_manifest(
        target: BackendTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store that put a thread's list keeps what each manifest's chain folds to, so
    reading the latest checkpoint (again after one more put) decodes none of the chain's
    manifests; a store opened afresh folds the chain and reads the same list."""
    decoded: list[bytes] = []
    decode = elements.decode_manifest

    def counted(data: bytes) -> elements.Manifest | None:
        decoded.append(data)
        return decode(data)

    steps = MAX_CHAIN + 7  # past a full manifest: the chain starts again
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", steps)
        monkeypatch.setattr(elements, "decode_manifest", counted)
        for start in (steps, steps + 1):
            if start > steps:
                await grow(log, "chat", 1, start=steps)
            decoded.clear()
            found = await log.checkpoints.threads.get(T, "chat")
            assert found is not None
            assert found.channels is not None
            assert chat(start) == found.channels["messages"]
            assert len(decoded) <= 1  # the read's own manifest, not its chain
    if target.name == "memory":
        return
    async with open_log(target.url, **target.options()) as fresh:
        decoded.clear()
        found = await fresh.checkpoints.threads.get(T, "chat")
        assert found is not None
        assert found.channels is not None
        assert chat(steps + 1) == found.channels["messages"]
        assert len(decoded) > 1  # its chain (7 manifests since the last full one)
