"""verify's memory does not grow with the number of blobs: the references the events hold
are tallied in a temporary file and merged with the stored counts page by page, in
digest order. Measured with tracemalloc (Python allocations during verify only) on logs
of 4,000 and of 16,000 distinct blobs, in a child process of its own (tests/peaks.py says
why)."""

from __future__ import annotations

import tracemalloc
import uuid
from collections.abc import Sequence

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.hashing import content_digest
from eventlog.log import _blobs
from eventlog.storage.memory import MemoryBackend
from eventlog.testing.events import Noted
from tests.peaks import dictionary_yardstick, in_child

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


async def verify_peak(blobs: int) -> int:
    """Peak bytes Python allocates while verifying a log of ``blobs`` distinct states, 100
    checkpoints a session (a stream's own counts are held while verify is inside it)."""
    async with open_log("memory://") as log:
        for number in range(blobs):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=f"s{number // 100}", run_id=RUN,
                state={"n": number}))
        tracemalloc.start()
        try:
            report = await log.verify()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert report.ok, report
        return peak


async def verify_peaks() -> dict[str, int]:
    """verify's peaks at 4,000 and 16,000 blobs after a warm-up verify, and the yardstick:
    what holding the 12,000 extra blobs' counts in a dictionary takes."""
    await verify_peak(1_000)
    return {"small": await verify_peak(4_000), "large": await verify_peak(16_000),
            "yardstick": dictionary_yardstick(12_000)}


@pytest.mark.growth
def test_verify_memory_is_flat_in_the_number_of_blobs() -> None:
    """Four times the blobs add less than half of what a dictionary of the extra blobs'
    counts holds (counts held in dictionaries grew the peak about 4 times)."""
    peaks = in_child("tests.test_verify_memory:verify_peaks")
    assert peaks["large"] - peaks["small"] < peaks["yardstick"] / 2, peaks


async def test_verify_reads_blobs_in_runs_bounded_by_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a budget smaller than any blob each is read alone: every blob is still
    checked, and a rewritten one is still found."""
    monkeypatch.setattr(_blobs, "_BLOB_PAGE_BYTES", 1)
    read: list[int] = []
    async with open_log("memory://") as log:
        storage = log.storage
        get_blobs = storage.get_blobs

        async def counted(tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
            read.append(len(digests))
            return await get_blobs(tenant_id, digests)

        monkeypatch.setattr(storage, "get_blobs", counted)
        for number in range(5):
            await log.append("t", f"s{number}", [Noted(text="x")],
                             attach=[f"blob {number}".encode()])
        assert isinstance(storage, MemoryBackend)
        storage.blobs["t", content_digest(b"blob 3")] = b"rewritten"
        read.clear()
        report = await log.verify()
    assert {1} == {n for n in read if n}  # one blob a query, never the page
    assert 5 == report.blobs
    assert ["blob_corrupt"] == [problem.kind for problem in report.problems]
