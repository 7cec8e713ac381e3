"""Thread puts stored compact (migration 0032): a put whose channels' versions are the
ones its ``versions`` names (every LangGraph put) is stored without them, fields at their
defaults are left out of the thread events, and both forms read back as the event that
was appended; the downgrade below 0032 refuses a log holding one."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import open_log
from eventlog.checkpoints import ChannelValue, Payload
from eventlog.crypto import init_keyring
from eventlog.errors import CorruptEvent
from eventlog.events import default_registry
from eventlog.events.threads import BlobRef, ThreadCheckpointPut, ThreadWritesPut, WriteRef
from tests.conftest import PG_URL
from tests.test_holdings_folded import _pg_migrate
from tests.test_sqlite_without_rowid import _migrate as migrate_sqlite

BEFORE = "0031_runs_index_partial"
DIGEST = "ab" * 32
VERSION = "00000000000000000000000000000021.0.06582934107629923"


def _put(channels: list[BlobRef], versions: dict[str, str]) -> ThreadCheckpointPut:
    return ThreadCheckpointPut(thread_id="t", checkpoint_id="c", state_encoding="json",
                               state_digest=DIGEST, state_size=2, channels=channels,
                               versions=versions)


def test_a_put_naming_its_versions_is_stored_without_them() -> None:
    """The channels carry no version of their own, the flag says so, no default is
    written, and the bytes decode to the put appended."""
    put = _put([BlobRef(name="messages", encoding="eventlog.elements", digest=DIGEST,
                        version=VERSION, base="00000000000000000000000000000020.0.9",
                        elements=[DIGEST]),
                BlobRef(name="step", encoding="msgpack", digest=DIGEST, version=VERSION)],
               {"messages": VERSION, "step": VERSION, "__start__": "1"})
    tag, data = default_registry.encode(put)
    body = msgspec.json.decode(data)
    assert (True, [["name", "encoding", "digest", "base", "elements"],
                   ["name", "encoding", "digest"]]) == (
        body["versions_named"], [list(channel) for channel in body["channels"]])
    assert ([VERSION, "1"], {"messages": 0, "step": 0, "__start__": 1}, False) == (
        body["version_list"], body["versions_at"], "versions" in body)
    assert b'"namespace"' not in data
    assert b'"subject"' not in data
    assert put == default_registry.decode(tag, data)
    full = msgspec.json.encode(msgspec.to_builtins(put))
    assert len(data) < len(full) - 2 * len(VERSION)


def test_a_put_with_a_version_of_its_own_is_stored_whole() -> None:
    """A channel whose version is not the one ``versions`` names, or a content-addressed
    one (no version), keeps every version written out."""
    for channels in ([BlobRef(name="a", encoding="json", digest=DIGEST, version="v2")],
                     [BlobRef(name="a", encoding="json", digest=DIGEST)]):
        put = _put(channels, {"a": "v1"})
        tag, data = default_registry.encode(put)
        assert b"versions_named" not in data
        assert put == default_registry.decode(tag, data)


def test_the_form_older_code_wrote_reads_the_same() -> None:
    """A put written whole, every default spelled out (as before 0032), decodes to the
    same event as its compact form."""
    put = _put([BlobRef(name="a", encoding="json", digest=DIGEST, version=VERSION)],
               {"a": VERSION})
    old = msgspec.json.encode({
        "type": "thread_checkpoint_put", "thread_id": "t", "namespace": "",
        "checkpoint_id": "c", "parent_id": None, "run_key": None, "step": None,
        "state_encoding": "json", "state_digest": DIGEST, "state_size": 2,
        "channels": [{"name": "a", "encoding": "json", "digest": DIGEST, "version": VERSION,
                      "base": "", "elements": []}],
        "metadata": {}, "versions": {"a": VERSION}, "subject": None})
    assert put == default_registry.decode("thread_checkpoint_put", old)
    writes = ThreadWritesPut(thread_id="t", checkpoint_id="c", task_id="k", writes=[
        WriteRef(idx=0, channel="a", encoding="json", digest=DIGEST)])
    tag, data = default_registry.encode(writes)
    assert (b'"elements"' not in data, writes) == (True, default_registry.decode(tag, data))


@pytest.mark.parametrize("crafted", [
    b'"versions":{"b":"v1"},"versions_named":true',
    b'"versions":{"a":"v1"},"versions_named":true,"channels":[{"name":"a","encoding":"j",'
    b'"digest":"' + DIGEST.encode() + b'","version":"v9"}]',
    b'"versions_named":true,"version_list":["v1"],"versions_at":{"a":1}',
    b'"versions_named":true,"version_list":["v1"],"versions_at":{"a":-1}',
    b'"versions":{"a":"v2"},"versions_named":true,"version_list":["v1"],"versions_at":{"a":0}',
    b'"version_list":["v1"],"versions_at":{"a":0}',
])
def test_a_crafted_compact_put_is_corrupt_not_misread(crafted: bytes) -> None:
    """Compact bytes that name no version for a channel, or also give one of its own,
    or name a version by an index the list does not hold, or name the versions twice,
    do not decode: `CorruptEvent`, never a channel read at a guessed version."""
    head = (b'{"type":"thread_checkpoint_put","thread_id":"t","checkpoint_id":"c",'
            b'"state_encoding":"j","state_digest":"' + DIGEST.encode() + b'","state_size":1,')
    channels = b'"channels":[{"name":"a","encoding":"j","digest":"' + DIGEST.encode() + b'"}],'
    data = head + (crafted + b"}" if b'"channels"' in crafted else channels + crafted + b"}")
    with pytest.raises(CorruptEvent):
        default_registry.decode("thread_checkpoint_put", data)


names = st.sampled_from(["a", "b", "messages", "branch:to:x"])
versions_text = st.sampled_from(["", "v1", "v2", VERSION])


@given(st.lists(st.tuples(names, versions_text), max_size=4, unique_by=lambda c: c[0]),
       st.dictionaries(names, versions_text.filter(bool), max_size=4))
def test_every_put_reads_back_as_appended(channels: list[tuple[str, str]],
                                          versions: dict[str, str]) -> None:
    """Whatever its channels and versions, a put decodes to itself, and it is stored
    compact exactly when every channel has a version and it is the one named."""
    put = _put([BlobRef(name=name, encoding="json", digest=DIGEST, version=version)
                for name, version in channels], versions)
    tag, data = default_registry.encode(put)
    compact = bool(channels) and all(version and versions.get(name) == version
                                     for name, version in channels)
    repeated = len(set(versions.values())) < len(versions)
    assert (put, compact, compact and repeated) == (
        default_registry.decode(tag, data), b"versions_named" in data,
        b"version_list" in data)
    assert list(versions) == list(default_registry.decode(tag, data).versions)  # in order


async def _put_langgraph_shaped(url: str, **options: Any) -> list[Any]:
    """Puts whose channel versions are the map's, then their values read back by id;
    verify holds; every stored put event is compact."""
    async with open_log(url, **options) as log:
        threads = log.checkpoints.threads
        for step in range(3):
            version = f"{step:032}.0.5"
            await threads.put("acme", "t", f"c{step}", parent_id=f"c{step - 1}" if step else None,
                              state=Payload("json", b'{"v": 1}'), channels={
                                  "messages": ChannelValue(version, Payload(
                                      "json", f'["m{step}"]'.encode())),
                                  "step": ChannelValue(version, Payload(
                                      "json", str(step).encode()))})
        found = []
        for step in range(3):
            read = await threads.get("acme", "t", f"c{step}")
            assert read is not None
            assert read.channels is not None
            found.append({name: value.data for name, value in read.channels.items()
                          if isinstance(value, Payload)})
        events = [event async for event in log.read_stream("acme", "thread:t")]
        assert (await log.verify()).ok
        assert all(b'"versions_named":true' in event.data for event in events)
        return found


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
async def test_compact_puts_read_back_on_every_store(url: str, tmp_path: Path) -> None:
    """Stored compact, read back with every channel at its version (memory, SQLite)."""
    found = await _put_langgraph_shaped(url if url != "sqlite" else
                                        f"sqlite:///{tmp_path / 'log.db'}")
    assert [{"messages": f'["m{step}"]'.encode(), "step": str(step).encode()}
            for step in range(3)] == found


async def test_sqlite_refuses_to_downgrade_a_log_holding_compact_puts(tmp_path: Path) -> None:
    """Below 0032 the older code would misread a compact put: the downgrade refuses and
    leaves the file at the head; a log without one downgrades and upgrades."""
    path = tmp_path / "log.db"
    await _put_langgraph_shaped(f"sqlite:///{path}")
    with pytest.raises(RuntimeError, match="thread puts stored compact"):
        migrate_sqlite(path, BEFORE, down=True)
    database = sqlite3.connect(path)
    try:
        assert [("0032_compact_puts",)] == database.execute(
            "SELECT version_num FROM alembic_version").fetchall()
    finally:
        database.close()
    empty = tmp_path / "empty.db"
    async with open_log(f"sqlite:///{empty}") as log:
        await log.checkpoints.threads.put("acme", "t", "c", state=Payload("json", b"{}"))
    migrate_sqlite(empty, BEFORE, down=True)
    async with open_log(f"sqlite:///{empty}") as log:
        assert (await log.verify()).ok


async def test_postgres_refuses_to_downgrade_a_log_holding_compact_puts(
        pg_schema: str, tmp_path: Path) -> None:
    """The same on PostgreSQL (an encrypted log: the flag is never sealed)."""
    keyring = init_keyring(tmp_path / "kek.json")
    await _put_langgraph_shaped(PG_URL, schema=pg_schema, keyring=keyring)
    with pytest.raises(RuntimeError, match="thread puts stored compact"):
        await _pg_migrate(pg_schema, BEFORE)
    async with open_log(PG_URL, schema=pg_schema, keyring=keyring) as log:
        assert "0032_compact_puts" == log.schema_revision


async def test_a_log_written_before_upgrades_and_takes_compact_puts(tmp_path: Path) -> None:
    """A log written by older code (the pre-0025 fixture: every put whole) opens at
    0032 and takes compact puts in the same thread: its old checkpoints read as that code
    read them, the new ones read back, the log verifies, its views equal a rebuild from
    the mixed events, its tree holds its head, and removals afterwards release what the
    remaining events no longer hold."""
    from projections import compare_views
    from tests.test_holdings_folded import FIXTURE, MAKE, _remove_and_check

    path = tmp_path / "log.db"
    shutil.copy(FIXTURE / "log.db", path)
    async with open_log(f"sqlite:///{path}") as log:
        threads = log.checkpoints.threads
        assert "0032_compact_puts" == log.schema_revision
        old = await MAKE.reads(log)
        for step in range(12, 15):
            version = f"{step:032}.0.5"
            await threads.put("t", "chat", f"{step:04}", parent_id=f"{step - 1:04}",
                              state=Payload("json", b'"state"'), step=step, channels={
                                  "count": ChannelValue(version, Payload(
                                      "json", f'"{step}"'.encode())),
                                  "topic": ChannelValue(f"{0:032}.0.0")})
        head = await log.tree_head("t")
        read = await MAKE.reads(log)
        new = [item for item in read if item["thread_id"] == "chat" and item["namespace"] == ""
               and item["tenant_id"] == "t" and int(item["checkpoint_id"]) >= 12]
        assert old == [item for item in read if item not in new]
        assert [(f"{step:04}", f'"{step}"'.encode(), "the topic") for step in range(12, 15)] == [
            (item["checkpoint_id"], base64.b64decode(item["channels"]["count"]["data"]),
             json.loads(base64.b64decode(item["channels"]["topic"]["data"])))
            for item in sorted(new, key=lambda item: item["checkpoint_id"])]
        events = [event async for event in log.read_stream("t", "thread:chat")
                  if event.type == "thread_checkpoint_put"]
        assert [False] * (len(events) - 3) + [True] * 3 == [
            b'"versions_named":true' in event.data for event in events]
        assert (await log.verify()).ok
        assert [] == await compare_views(log)
        assert [] == await log.check_tree("t", head)
        await _remove_and_check(log)


async def _langgraph_puts(log: Any) -> None:
    for step in range(2):
        version = f"{step:032}.0.5"
        await log.checkpoints.threads.put("acme", "t", f"c{step}", state=Payload("json", b"{}"),
                                          channels={"a": ChannelValue(version, Payload(
                                              "json", str(step).encode()))})


async def test_a_file_store_is_stamped_version_2_and_older_ones_still_open(
        tmp_path: Path) -> None:
    """The file store's format is version 2 (its puts may be compact, which the code of
    version 1 would misread and so must refuse): a version 1 store opens and is stamped 2
    when opened to write, left as it is by a forensic read; version 3 is refused."""
    from eventlog.errors import UnknownSchemaRevision

    root = tmp_path / "store"
    async with open_log(f"file://{root}") as log:
        await _langgraph_puts(log)
    manifest = root / "manifest.json"
    assert 2 == json.loads(manifest.read_bytes())["version"]
    manifest.write_text(json.dumps({"format": "checkpoint-eventlog/file", "version": 1}))
    async with open_log(f"file://{root}", upgrade=False) as log:
        assert (await log.verify()).ok
    assert 1 == json.loads(manifest.read_bytes())["version"]
    async with open_log(f"file://{root}") as log:
        read = await log.checkpoints.threads.get("acme", "t")
        assert read is not None
        assert ("c1", {"a": f"{1:032}.0.5"}) == (read.checkpoint_id, read.versions)
    assert 2 == json.loads(manifest.read_bytes())["version"]
    manifest.write_text(json.dumps({"format": "checkpoint-eventlog/file", "version": 3}))
    with pytest.raises(UnknownSchemaRevision):
        async with open_log(f"file://{root}"):
            pass


async def test_an_export_is_version_2_and_version_1_files_still_import() -> None:
    """Exports are format version 2 (they may carry compact puts); a version 1 file (every
    put written out) still imports; version 3 is refused, naming the versions read."""
    import io

    from eventlog.errors import InvalidInput
    from eventlog.transfer import export_log, import_log

    async with open_log("memory://") as log:
        await _langgraph_puts(log)
        sink = io.BytesIO()
        await export_log(log, sink, tenant_id="acme")
    lines = sink.getvalue().splitlines()
    header = json.loads(lines[0])
    assert 2 == header["version"]
    for version, imports in ((1, True), (3, False)):
        body = b"\n".join([json.dumps({**header, "version": version}).encode(), *lines[1:]])
        async with open_log("memory://") as target:
            if imports:
                await import_log(target, io.BytesIO(body + b"\n"))
                assert (await target.verify()).ok
            else:
                with pytest.raises(InvalidInput, match="reads versions 1, 2"):
                    await import_log(target, io.BytesIO(body + b"\n"))
