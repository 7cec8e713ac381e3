"""``eventlog import`` streams its file: memory does not grow with the state it carries,
and a line too long to be an export's is refused without being read whole."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.transfer import export_log, line_limit
from tests.growth.rss import MB, measure

pytestmark = pytest.mark.growth

RUN = uuid.UUID("00000000-0000-4000-8000-000000000007")
BLOB = 1024 * 1024


async def export_file(path: Path, blobs: int) -> None:
    """An export of ``blobs`` checkpoints, each with 1 MiB of distinct state."""
    async with open_log("memory://") as log:
        for number in range(blobs):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{number % 8}", run_id=RUN,
                state=f"{number:08d}" + "x" * BLOB))
        with path.open("wb") as sink:
            await export_log(log, sink, tenant_id="t")


def import_peak(tmp_path: Path, blobs: int) -> float:
    """Peak RSS (MiB) of importing a file of ``blobs`` MiB of state into SQLite."""
    scratch = tmp_path / str(blobs)
    scratch.mkdir()
    file = scratch / "export.jsonl"
    asyncio.run(export_file(file, blobs))
    ran = measure("import", str(file), "--url", f"sqlite:///{scratch / 'copy.db'}",
                  "--json", scratch=scratch)
    assert EXIT_OK == ran.status, ran.err
    assert blobs == json.loads(ran.out)["blobs_imported"], ran.out
    return ran.peak_mb


def test_import_memory_is_flat_in_the_state_the_file_carries(tmp_path: Path) -> None:
    """48 then 192 MiB of state: the peak grows by less than 40 MiB (it grew by the
    whole difference, and more, when every blob was kept to the end)."""
    small, large = import_peak(tmp_path, 48), import_peak(tmp_path, 192)
    assert large - small < 40, (small, large)


def test_a_line_longer_than_any_export_holds_is_refused_unread(tmp_path: Path) -> None:
    """A 512 MiB file without a newline after its header: exit 2 naming the line, having
    read no more than the longest legal line (the peak stays far below the file)."""
    file = tmp_path / "long.jsonl"
    with file.open("wb") as sink:
        sink.write(b'{"format": "checkpoint-eventlog/export", "version": 1, "tenant": "t"}\n')
        sink.truncate(512 * MB)  # a sparse file: 512 MiB of zero bytes, no newline
    ran = measure("import", str(file), "--url", f"sqlite:///{tmp_path / 'copy.db'}",
                  scratch=tmp_path)
    assert EXIT_USAGE == ran.status, ran.err
    assert f"line 2: longer than {line_limit(16 * MB)} bytes" in ran.err, ran.err
    assert str(file) in ran.err, ran.err
    assert ran.peak_mb < 200, ran.peak_mb
    assert not (tmp_path / "copy.db").exists()
