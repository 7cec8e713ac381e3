"""States nested 100,000 deep (``[[[[…]]]]``, past what the JSON decoder reads) are shown to
`MAX_DEPTH` levels and then marked, by ``report``, ``inspect`` and ``timeline``: no command
fails with RecursionError. Also 500 deep, which the decoder reads but a recursive walk of
the value does not."""

from __future__ import annotations

import asyncio
import html
import json
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.adapters._safe_values import MAX_DEPTH, TOO_DEEP, read_json
from eventlog.checkpoints import decisions
from eventlog.checkpoints.records import CheckpointRecord
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from eventlog.cli import EXIT_OK
from tests.cli.helpers import Run, make_runner
from tests.conftest import BackendTarget

TENANT = "acme"
MARKER = "<what is nested deeper than 64 levels not decoded>"


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def depth_of(value: object) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


async def write_deep(url: str, depth: int) -> None:
    """A session whose second checkpoint's state is ``nested(depth)`` (written as encoded
    bytes, as an import or the typed layer can), a LangGraph thread with such a channel
    value and an Agent Framework thread with such a state."""
    async with open_log(url) as log:
        store, run_id = log.checkpoints, uuid.uuid4()
        first = await store.create(CheckpointRecord(tenant_id=TENANT, session_id="s",
                                                    run_id=run_id, state={"a": 1}))
        checked = decisions.check_record(CheckpointRecord(
            tenant_id=TENANT, session_id="s", run_id=run_id, state=None,
            parent_id=first.checkpoint_id), store.max_state_bytes)
        await store.create_encoded(checked, None, decisions.EncodedState("json", nested(depth)))
        state = {"v": 4, "id": "1", "ts": "2030-01-01T00:00:00+00:00",
                 "channel_versions": {"x": "1"}, "versions_seen": {}, "updated_channels": ["x"]}
        await log.threads.put(TENANT, "lg", "1", state=Payload("json", json.dumps(state).encode()),
                              channels={"x": ChannelValue("1", Payload("json", nested(depth)))})
        await log.threads.put(TENANT, "maf", "maf-1", run_key="maf-1", step=0, state=Payload(
            "maf-checkpoint+json", b'{"workflow_name": "maf", "state": ' + nested(depth) + b"}"))


@pytest.fixture(params=[100_000, 500], ids=["100000-deep", "500-deep"])
def deep(request: pytest.FixtureRequest, tmp_path: Path,
         capsys: pytest.CaptureFixture[str]) -> Run:
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")
    asyncio.run(write_deep(target.url, request.param))
    return make_runner(capsys, target)


def test_read_json_marks_what_lies_past_the_depth() -> None:
    """JSON the decoder cannot read is read to `MAX_DEPTH` levels, then `TOO_DEEP`;
    brackets inside strings are text."""
    value = read_json(b'{"a": ' + nested(100_000) + b', "b": "]]}{["}')
    assert "]]}{[" == value["b"]
    assert MAX_DEPTH - 1 == depth_of(value["a"])
    inner = value["a"]
    for _ in range(MAX_DEPTH - 1):
        inner = inner[0]
    assert TOO_DEEP == inner == MARKER


def test_the_report_shows_a_deep_session_state_to_the_depth_and_says_so(
    deep: Run, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    done = deep("report", TENANT, "s", "-o", str(page))
    assert EXIT_OK == done.status, done.err
    shown = html.unescape(page.read_text())
    assert f"nested deeper than {MAX_DEPTH} levels: shown to that depth, then {MARKER}" in shown


@pytest.mark.parametrize("thread", ["lg", "maf"])
def test_inspect_shows_a_deep_thread_value_to_the_depth_then_the_marker(
    deep: Run, thread: str
) -> None:
    done = deep("inspect", TENANT, thread, "--json")
    assert EXIT_OK == done.status, done.err
    assert MARKER in done.out


@pytest.mark.parametrize("thread", ["s", "lg", "maf"])
def test_timeline_and_report_of_a_deep_state_succeed(
    deep: Run, thread: str, tmp_path: Path
) -> None:
    page = tmp_path / f"{thread}.html"
    timeline = deep("timeline", TENANT, thread, "--json")
    report = deep("report", TENANT, thread, "-o", str(page))
    assert (EXIT_OK, EXIT_OK) == (timeline.status, report.status), timeline.err + report.err
    assert page.exists()
