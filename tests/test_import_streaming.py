"""Import holds a blob's bytes only until the batch that stores it commits, reading it
again from the file when a later event names it, and refuses an overlong line unread
(issue 21, item 7; the memory itself is measured by ``pytest -m growth``)."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, EventLog, InvalidInput, content_digest, open_log, transfer
from eventlog.transfer import check_export, export_log, import_log, line_limit
from tests.events import Noted

HEADER = b'{"format": "checkpoint-eventlog/export", "version": 1, "tenant": "t"}\n'


async def create(log: EventLog, session: str, state: object) -> None:
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=session, run_id=uuid.uuid4(), state=state))


async def export(log: EventLog, path: Path) -> None:
    with path.open("wb") as sink:
        await export_log(log, sink, tenant_id="t")


async def test_a_line_longer_than_any_export_holds_is_refused_unread() -> None:
    """The error names the line and the limit; no more than the limit was read of it."""
    source = io.BytesIO(HEADER + b"x" * 100_000)
    async with open_log("memory://", max_payload_bytes=1000) as log:
        limit = line_limit(1000)
        with pytest.raises(InvalidInput, match=f"line 2: longer than {limit} bytes"):
            await import_log(log, source)
        assert source.tell() <= len(HEADER) + limit + 1
    source.seek(0)
    with pytest.raises(InvalidInput, match=f"line 2: longer than {limit} bytes"):
        check_export(source, max_payload_bytes=1000)


@pytest.mark.parametrize("group_bytes", [1, 32 * 1024 * 1024])
async def test_a_blob_named_again_in_a_later_batch_is_read_again_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_bytes: int,
) -> None:
    """A state whose record sits before an event the target already holds (a deleted
    session: the target purged the state) and that a new session names again: its bytes
    are read again from the file. Batches of one event each (a budget of one byte) or
    of all; the copy verifies and counts as the source does."""
    monkeypatch.setattr(transfer, "_GROUP_BYTES", group_bytes)
    async with open_log(f"sqlite:///{tmp_path / 'source.db'}") as source, open_log(
            f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        await create(source, "a", {"shared": True})
        await create(source, "b", {"own": "b"})
        await source.checkpoints.delete("t", "a")
        await export(source, tmp_path / "first.jsonl")
        with (tmp_path / "first.jsonl").open("rb") as handle:
            await import_log(copy, handle)
        for session in ("c", "b", "d"):
            await create(source, session, {"shared": True})
        await export(source, tmp_path / "second.jsonl")
        with (tmp_path / "second.jsonl").open("rb") as handle:
            summary = await import_log(copy, handle)
        assert 3 == summary.events_imported
        assert await source.blob_refs("t") == await copy.blob_refs("t")
        report = await copy.verify()
        assert report.ok, report.problems


@pytest.mark.parametrize("group_bytes", [1, 32 * 1024 * 1024])
async def test_a_blob_no_event_names_goes_with_the_last_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_bytes: int,
) -> None:
    """The file's trailing blob (attached to an application's event, so no event names
    its digest) is stored with the import's last batch, however many batches came before
    (one event each, or all in one): what ``flush(final=True)`` was once for, now
    `_Importer.adopt_unnamed` before the last flush."""
    monkeypatch.setattr(transfer, "_GROUP_BYTES", group_bytes)
    async with open_log(f"sqlite:///{tmp_path / 'source.db'}") as source, open_log(
            f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        await create(source, "a", {"n": 1})
        await source.append("t", "notes", [Noted(text="with a blob")], attach=[b"opaque"])
        await create(source, "b", {"n": 2})
        await export(source, tmp_path / "t.jsonl")
        with (tmp_path / "t.jsonl").open("rb") as handle:
            summary = await import_log(copy, handle)
        assert (3, 3) == (summary.events_imported, summary.blobs_imported)
        assert await source.blob_refs("t") == await copy.blob_refs("t")
        assert b"opaque" == await copy.get_blob("t", content_digest(b"opaque"))
        report = await copy.verify()
        assert report.ok, report.problems
