"""Import and the log refuse what would corrupt a copy (issue 14): reference counts come
from the events, the whole file is checked before the first write, and no event may sit
outside the stream it belongs to."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from eventlog import (
    CheckpointRecord,
    EventLog,
    Interrupt,
    InvalidInput,
    Operation,
    open_log,
)
from eventlog.events.interrupts import BatchCreated
from eventlog.hashing import GENESIS_HASH, event_hash
from eventlog.transfer import export_log, import_log
from tests.conftest import BackendTarget

STATE = {"pay_to": "ACME", "cents": 1250}
OPERATION = Operation("op", "1")


async def create(log: EventLog, session: str, state: object = STATE) -> str:
    record = await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=session, run_id=uuid.uuid4(), state=state))
    assert record.checkpoint_id is not None
    return record.checkpoint_id


async def copy(source: EventLog, target: EventLog) -> None:
    """Export tenant t from ``source`` and import the file into ``target``."""
    sink = io.BytesIO()
    await export_log(source, sink, tenant_id="t")
    sink.seek(0)
    await import_log(target, sink)


async def refs(log: EventLog) -> dict[bytes, int]:
    return dict(await log.blob_refs("t"))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_second_import_counts_a_shared_state_twice(
    target: BackendTarget, tmp_path: Path,
) -> None:
    """Export/import, the source adds a checkpoint with the same state, export/import
    again: the copy counts two references, so deleting one session keeps the other's
    state, and verify passes."""
    async with open_log(f"sqlite:///{tmp_path / 'source.db'}") as source, \
            open_log(target.url, **target.options()) as copy_log:
        await create(source, "s1")
        await copy(source, copy_log)
        second = await create(source, "s2")
        await copy(source, copy_log)
        assert await refs(source) == await refs(copy_log)
        assert [2] == list((await refs(copy_log)).values())
        assert 1 == await copy_log.checkpoints.delete("t", "s1")
        assert STATE == await copy_log.checkpoints.read("t", "s2", second)
        assert (await copy_log.verify()).ok


async def test_a_deleted_session_imports_with_its_references_released(tmp_path: Path) -> None:
    """A session created and deleted at the source (its state purged) imports without a
    dangling reference: the copy's counts equal the source's and verify passes."""
    async with open_log(f"sqlite:///{tmp_path / 'a.db'}") as source, \
            open_log(f"sqlite:///{tmp_path / 'b.db'}") as copy_log:
        await create(source, "gone", {"x": 1})
        await create(source, "kept", STATE)
        assert 1 == await source.checkpoints.delete("t", "gone")
        await copy(source, copy_log)
        assert await refs(source) == await refs(copy_log)
        assert (await copy_log.verify()).ok


def exported_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def export_to(path: Path) -> None:
    """A tenant with two sessions (two streams) exported to ``path``."""
    async with open_log("memory://") as log:
        await create(log, "s1")
        await create(log, "s2", {"other": True})
        with path.open("wb") as sink:
            await export_log(log, sink, tenant_id="t")


async def import_refused(path: Path, tmp_path: Path, match: str) -> None:
    """Importing ``path`` raises InvalidInput naming the file, and writes no event."""
    async with open_log(f"sqlite:///{tmp_path / 'copy.db'}") as copy_log:
        with path.open("rb") as source, pytest.raises(InvalidInput, match=match) as raised:
            await import_log(copy_log, source)
        assert "file" == raised.value.field
        assert [] == (await copy_log.read_all()).events


async def test_an_undecodable_event_in_a_later_stream_writes_nothing(tmp_path: Path) -> None:
    """The second stream's event does not decode: refused before the first stream is
    written (the whole file is checked first)."""
    path = tmp_path / "t.jsonl"
    await export_to(path)
    lines = exported_lines(path)
    events = [line for line in lines if line.get("kind") == "event"]
    bad = events[-1]
    data = json.loads(base64.b64decode(str(bad["data"])))
    data["step"] = "not a number"
    raw = msgspec.json.encode(data)
    bad["data"] = base64.b64encode(raw).decode()
    bad["hash"] = event_hash(
        tenant_id="t", stream_id=str(bad["stream"]), version=int(str(bad["version"])),
        event_id=uuid.UUID(str(bad["id"])), type=str(bad["type"]),
        recorded_at=datetime.fromtimestamp(int(str(bad["recorded_at"])) / 1e6, UTC),
        data=raw, prev_hash=bytes.fromhex(str(bad["prev_hash"]))).hex()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await import_refused(path, tmp_path, "line")


async def test_an_out_of_range_time_is_a_malformed_file(tmp_path: Path) -> None:
    """recorded_at past year 9999 is a malformed event (not an OverflowError)."""
    path = tmp_path / "t.jsonl"
    await export_to(path)
    lines = exported_lines(path)
    next(line for line in lines if line.get("kind") == "event")["recorded_at"] = 10**18
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await import_refused(path, tmp_path, "malformed event")


async def test_a_forged_batch_stream_is_refused_on_import(tmp_path: Path) -> None:
    """A new stream holding a BatchCreated for another batch's id would reset that batch's
    view row: the file is refused, naming the line."""
    async with open_log("memory://") as log:
        checkpoint = await create(log, "thread")
        batch = await log.interrupts.create("t", "thread", [Interrupt(id="ok", reason="r")],
                                            checkpoint, operation=OPERATION)
        path = tmp_path / "t.jsonl"
        with path.open("wb") as sink:
            await export_log(log, sink, tenant_id="t")
    lines = exported_lines(path)
    created = next(line for line in lines if line.get("type") == "interrupt.batch_created")
    forged = dict(created, stream="interrupt-batch:" + str(uuid.uuid4()), id=str(uuid.uuid4()))
    assert batch.batch_id in base64.b64decode(str(forged["data"])).decode()
    forged["hash"] = event_hash(
        tenant_id="t", stream_id=str(forged["stream"]), version=1,
        event_id=uuid.UUID(str(forged["id"])), type=str(forged["type"]),
        recorded_at=datetime.fromtimestamp(int(str(forged["recorded_at"])) / 1e6, UTC),
        data=base64.b64decode(str(forged["data"])), prev_hash=GENESIS_HASH).hex()
    end = lines.pop()
    lines.append(forged)
    end["events"] = int(str(end["events"])) + 1
    lines.append(end)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await import_refused(path, tmp_path, "sits in stream")


async def test_the_log_refuses_an_event_outside_its_stream() -> None:
    """append of a batch's (or a session's) event to another stream is InvalidInput."""
    async with open_log("memory://") as log:
        event = BatchCreated(batch_id="b1", thread_id="t", checkpoint_id="c",
                             operation_name="op", operation_version="1", interrupts=(),
                             approval_expires_at=datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(InvalidInput, match="belongs to stream 'interrupt-batch:b1'"):
            await log.append("t", "interrupt-batch:b2", [event])
        assert [] == (await log.read_all()).events


async def test_verify_reports_an_event_found_outside_its_stream(tmp_path: Path) -> None:
    """An event written behind the log's back into the wrong stream (hash chain intact)
    is a wrong_stream finding."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        await create(log, "s1")
    event = BatchCreated(batch_id="victim", thread_id="t", checkpoint_id="c",
                         operation_name="op", operation_version="1", interrupts=(),
                         approval_expires_at=datetime(2030, 1, 1, tzinfo=UTC))
    data = msgspec.json.encode(event)
    event_id, now = uuid.uuid4(), datetime(2030, 1, 1, tzinfo=UTC)
    digest = event_hash(tenant_id="t", stream_id="interrupt-batch:forged", version=1,
                        event_id=event_id, type="interrupt.batch_created", recorded_at=now,
                        data=data, prev_hash=GENESIS_HASH)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(
            "INSERT INTO events (tenant_id, stream_id, stream_version, event_id, type, data, "
            "recorded_at, prev_hash, hash) VALUES ('t', 'interrupt-batch:forged', 1, ?, "
            "'interrupt.batch_created', ?, ?, ?, ?)",
            (event_id.hex, data, now.strftime("%Y-%m-%d %H:%M:%S.%f"), GENESIS_HASH, digest))
        connection.execute(
            "INSERT INTO stream_heads (tenant_id, stream_id, version, head_hash, last_position, "
            "updated_at) VALUES ('t', 'interrupt-batch:forged', 1, ?, 99, ?)",
            (digest, now.strftime("%Y-%m-%d %H:%M:%S.%f")))
    connection.close()
    async with open_log(f"sqlite:///{path}") as log:
        report = await log.verify()
    assert [("interrupt-batch:forged", 1, "wrong_stream")] == [
        (p.stream_id, p.version, p.kind) for p in report.problems]


async def test_a_header_whose_version_is_true_is_refused(tmp_path: Path) -> None:
    """"version": true is not version 1 (in Python True == 1)."""
    path = tmp_path / "t.jsonl"
    await export_to(path)
    lines = exported_lines(path)
    lines[0]["version"] = True
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    await import_refused(path, tmp_path, "format version True")
