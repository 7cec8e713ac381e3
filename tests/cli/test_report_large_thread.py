"""A LangGraph thread of 10,000 checkpoints in the report (issue 13's limits): the page
stays small and bounded, and the story is told in time linear in the thread's length."""

from __future__ import annotations

import gc
import hashlib
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from eventlog.cli.report.model import MAX_ROWS, build_session_report
from eventlog.cli.report.page import ReportData, VerifySummary, render_page
from eventlog.events import Event
from eventlog.events.threads import BlobRef, ThreadCheckpointPut
from eventlog.records import RecordedEvent
from tests.cli.test_report_page import recorded

_SERDE = JsonPlusSerializer()


def _blob(value: Any, blobs: dict[bytes, bytes]) -> tuple[str, str]:
    encoding, data = _SERDE.dumps_typed(value)
    digest = hashlib.sha256(data).digest()
    blobs[digest] = data
    return encoding, digest.hex()


def large_thread(count: int) -> tuple[list[RecordedEvent], dict[bytes, bytes]]:
    """``count`` checkpoints of one straight LangGraph line, each storing ``items``, with
    the payloads' bytes as the log would hand them back."""
    blobs: dict[bytes, bytes] = {}
    puts: list[tuple[str, Event]] = []
    for i in range(count):
        state = {"v": 4, "id": f"c{i:06d}", "channel_versions": {"items": str(i)},
                 "versions_seen": {"step": {"items": str(i)}}}
        encoding, digest = _blob(state, blobs)
        value_encoding, value = _blob([f"item {i}"], blobs)
        puts.append(("thread:big", ThreadCheckpointPut(
            thread_id="big", checkpoint_id=f"c{i:06d}", parent_id=f"c{i - 1:06d}" if i else None,
            step=i, state_encoding=encoding, state_digest=digest, state_size=100,
            channels=[BlobRef(name="items", encoding=value_encoding, digest=value,
                              version=str(i))],
            versions={"items": str(i)}, metadata={"source": "loop", "step": i})))
    return recorded(*puts), blobs


def test_ten_thousand_thread_checkpoints_make_a_small_bounded_page() -> None:
    """The table lists a bounded sample, the tree folds the straight line, the page is
    far below 10 MB."""
    events, payloads = large_thread(10_000)
    started = time.perf_counter()
    report = build_session_report("t", "big", events, (), payloads)
    html = render_page(ReportData(
        title="big", source="memory://", generated_at=datetime.now(UTC), sessions=[report],
        verify=VerifySummary(streams=1, events=len(events), problems=[], view_differences=[])))
    print(f"10,000 thread checkpoints: {len(html) / 1024:.0f} KiB in "
          f"{time.perf_counter() - started:.2f} s")
    assert (True, True, True) == (len(report.rows) <= MAX_ROWS, len(report.tree) < 20,
                                  len(html.encode()) < 10 * 1024 * 1024)


@pytest.mark.growth
def test_the_story_grows_linearly_with_the_thread() -> None:
    """Ten times the checkpoints take well under thirty times as long (no quadratic
    search left in the thread's story or its report).

    Timed with the cyclic garbage collector paused: its full collections scan every
    object alive in the process, so inside a long test session (and under load) they made
    the larger run 36 times the smaller (19 times alone; 9.3 times without them)."""
    timings = []
    for count in (1_000, 10_000):
        events, payloads = large_thread(count)
        best = float("inf")
        for _ in range(3):  # the fastest of three: a pause from other work is not the code's
            gc.collect()
            gc.disable()
            try:
                started = time.perf_counter()
                build_session_report("t", "big", events, (), payloads)
                best = min(best, time.perf_counter() - started)
            finally:
                gc.enable()
        timings.append(best)
    assert timings[1] < 30 * timings[0], timings
