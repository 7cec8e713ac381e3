"""Issue 30 §7: what a newcomer met in the first hour, each fixed where it is behaviour."""

from __future__ import annotations

import hashlib
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from eventlog.cli.report.threads import captions
from eventlog.cli.thread_story import build_thread_story
from eventlog.events import Event
from eventlog.events.threads import ThreadCheckpointPut, ThreadWritesPut, WriteRef
from tests.cli.test_report_page import recorded

_SERDE = JsonPlusSerializer()


def _blob(value: Any, blobs: dict[bytes, bytes]) -> tuple[str, str]:
    encoding, data = _SERDE.dumps_typed(value)
    digest = hashlib.sha256(data).digest()
    blobs[digest] = data
    return encoding, digest.hex()


def _put(checkpoint_id: str, blobs: dict[bytes, bytes], source: str = "loop"
         ) -> tuple[str, Event]:
    encoding, digest = _blob({"v": 4, "id": checkpoint_id, "channel_versions": {}}, blobs)
    return "thread:t1", ThreadCheckpointPut(
        thread_id="t1", checkpoint_id=checkpoint_id, step=0, state_encoding=encoding,
        state_digest=digest, state_size=10, metadata={"source": source, "step": 0})


def _writes(checkpoint_id: str, blobs: dict[bytes, bytes]) -> tuple[str, Event]:
    encoding, digest = _blob("hello", blobs)
    return "thread:t1", ThreadWritesPut(
        thread_id="t1", checkpoint_id=checkpoint_id, task_id="task-1", task_path="~plan",
        writes=[WriteRef(idx=0, channel="out", encoding=encoding, digest=digest)])


def test_timeline_says_why_writes_come_before_their_checkpoint() -> None:
    """Pending writes the log holds before their checkpoint's put say so, and why; writes
    after it do not."""
    blobs: dict[bytes, bytes] = {}
    events = recorded(_writes("c1", blobs), _put("c1", blobs), _writes("c1", blobs))
    _, lines = build_thread_story("t1", events, blobs)
    early, late = lines[1].details, lines[3].details
    assert (True, False) == ("listed before c1 itself: LangGraph saves" in early,
                             "listed before" in late)


def test_a_long_caption_is_shortened_visibly() -> None:
    """A caption past 40 characters ends in an ellipsis instead of stopping mid-word (the
    tooltip keeps it whole)."""
    blobs: dict[bytes, bytes] = {}
    source = "a source name long enough to run past the caption's forty characters"
    story, _ = build_thread_story("t1", recorded(_put("c1", blobs, source)), blobs)
    assert [source[:39] + "…"] == list(captions([story]).values())
