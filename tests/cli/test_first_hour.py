"""Issue 30 §7: what a newcomer met in the first hour, each fixed where it is behaviour."""

from __future__ import annotations

import hashlib
import inspect
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from eventlog import open_log
from eventlog.adapters import DEFAULT_TENANT
from eventlog.checkpoints import Payload
from eventlog.cli import EXIT_OK, main
from eventlog.cli.report.model import build_session_report
from eventlog.cli.report.page import ReportData, VerifySummary, render_page
from eventlog.cli.report.threads import captions
from eventlog.cli.thread_story import build_thread_story
from eventlog.events import Event
from eventlog.events.threads import ThreadCheckpointPut, ThreadWritesPut, WriteRef
from tests.cli.test_report_page import recorded
from tests.guide import guide_text

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


def test_the_adapters_default_tenant_is_the_documented_one() -> None:
    """Every adapter entry point that takes tenant_id defaults it to DEFAULT_TENANT, the
    tenant the guide names."""
    from eventlog.adapters.langgraph import AsyncEventlogSaver, EventlogSaver
    from eventlog.adapters.maf import EventlogCheckpointStorage

    defaults = {inspect.signature(call).parameters["tenant_id"].default for call in (
        AsyncEventlogSaver, AsyncEventlogSaver.from_conn_string, EventlogSaver.from_conn_string,
        EventlogCheckpointStorage, EventlogCheckpointStorage.from_url)}
    readme = guide_text()
    assert ({DEFAULT_TENANT}, True) == (
        defaults, f'tenant `"{DEFAULT_TENANT}"`' in readme)


async def _threads_only(url: str) -> None:
    async with open_log(url) as log:
        await log.checkpoints.threads.put(DEFAULT_TENANT, "th", "c1",
                                          state=Payload("json", b"{}"))


def test_stats_says_what_its_first_table_counts_and_marks_the_default_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant of LangGraph threads only: the first table's 0 is under "session
    checkpoints", the thread is counted in the threads' table, and the adapters' default
    tenant is marked and explained."""
    import asyncio

    url = f"sqlite:///{tmp_path / 'log.db'}"
    asyncio.run(_threads_only(url))
    monkeypatch.setenv("COLUMNS", "300")
    capsys.readouterr()
    assert EXIT_OK == main(["stats", "--url", url])
    out = capsys.readouterr().out
    assert EXIT_OK == main(["stats", "--json", "--url", url])
    found = json.loads(capsys.readouterr().out)
    assert (True, True, True, "default *" in out) == (
        "session checkpoints" in out, "the tenant the LangGraph and Agent Framework "
        "adapters use when no tenant_id is given" in out,
        (found["tenants"][0]["tenant_id"], found["tenants"][0]["thread_checkpoints"])
        == (DEFAULT_TENANT, 1), True)


def test_the_report_marks_the_default_tenant() -> None:
    """A session of the adapters' default tenant says so in its heading; another does not."""
    def page(tenant: str) -> str:
        return render_page(ReportData(
            title="t", source="memory://", generated_at=datetime.now(UTC),
            verify=VerifySummary(streams=0, events=0, problems=[], view_differences=[]),
            sessions=[build_session_report(tenant, "s", [])]))
    note = "the adapters' default tenant: no tenant_id was given"
    assert (True, False) == (note in page(DEFAULT_TENANT), note in page("acme"))


def test_a_caption_at_the_right_end_is_kept_inside_the_picture() -> None:
    """The last mark's caption (an answer, typically) is moved in rather than cut off at
    the picture's right edge."""
    from eventlog.cli.report.parts import Mark
    from eventlog.cli.report.svg import LABEL_WIDTH, Layout, _captions

    shape = Layout([LABEL_WIDTH + 5.0, LABEL_WIDTH + 395.0], [0, 1], 10.0, 400.0,
                   {"graph": 0}, 1)
    caption = 'answer "yes, ship it to Lisbon"'
    marks = [Mark(1, 2, "graph", "answer", "", caption=caption)]
    drawn = _captions(marks, shape)
    x = float(drawn.split('x="')[1].split('"')[0])
    assert x + 6.2 * len(caption) / 2 <= shape.width
