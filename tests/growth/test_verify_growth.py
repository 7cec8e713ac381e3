"""``eventlog verify`` reads blobs in pages bounded by bytes: its memory does not grow
with the state the log holds (it read 500 blobs a query, holding the page)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_OK
from tests.growth.rss import measure

pytestmark = pytest.mark.growth

RUN = uuid.UUID("00000000-0000-4000-8000-000000000007")
BLOB = 1024 * 1024


async def build(url: str, blobs: int) -> None:
    """``blobs`` checkpoints, each with 1 MiB of distinct state."""
    async with open_log(url) as log:
        for number in range(blobs):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{number % 8}", run_id=RUN,
                state=f"{number:08d}" + "x" * BLOB))


def verify_peak(tmp_path: Path, blobs: int) -> float:
    """Peak RSS (MiB) of verifying a SQLite log holding ``blobs`` MiB of state."""
    url = f"sqlite:///{tmp_path / f'{blobs}.db'}"
    asyncio.run(build(url, blobs))
    ran = measure("verify", "--url", url, scratch=tmp_path)
    assert EXIT_OK == ran.status, ran.err
    return ran.peak_mb


def test_verify_memory_is_flat_in_the_state_the_log_holds(tmp_path: Path) -> None:
    """48 then 192 MiB of state: the peak grows by less than 40 MiB (it grew by about
    twice the difference when a page of 500 blobs was read at once)."""
    small, large = verify_peak(tmp_path, 48), verify_peak(tmp_path, 192)
    assert large - small < 40, (small, large)
