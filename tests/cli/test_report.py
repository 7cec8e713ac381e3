"""``eventlog report``: the HTML file it writes for a session, a tenant, a moment."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import pytest

from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from tests.cli.helpers import Run, Story
from tests.cli.test_verify import _blob, execute
from tests.conftest import BackendTarget

mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


def test_a_session_report_is_written_and_named(
    story: Story, run: Run, tmp_path: Path
) -> None:
    """TENANT SESSION -o FILE: exit 0, the path printed (--json), lanes and marks drawn."""
    out = tmp_path / "r.html"
    ran = run("report", story.tenant, story.session, "-o", str(out), "--json")
    assert EXIT_OK == ran.status, ran.err
    written = ran.json()
    assert (str(out.resolve()), True, 1) == (written["path"], written["verify_ok"],
                                             written["sessions"])
    html = out.read_text()
    assert ["run 1", "run 2", "batch 1"] == re.findall(r'data-lane="([^"]+)"', html)
    assert 1 == html.count('class="mark k-duplicate')
    assert 'data-ok="true"' in html


def test_without_json_the_path_is_said(story: Story, run: Run, tmp_path: Path) -> None:
    """People are told where the report went."""
    out = tmp_path / "r.html"
    ran = run("report", story.tenant, story.session, "-o", str(out))
    assert EXIT_OK == ran.status
    assert f"report written: {out.resolve()}" in " ".join(ran.out.split())


def test_as_of_a_position_stops_there_and_says_so(
    story: Story, run: Run, tmp_path: Path
) -> None:
    """--as-of the first claim: later events are absent, the banner names the moment."""
    out = tmp_path / "r.html"
    moment = story.positions["claim 1"]
    ran = run("report", story.tenant, story.session, "--as-of", str(moment), "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    html = out.read_text()
    assert f"As of position {moment}" in html
    positions = [int(p) for p in re.findall(r'<tr class="ev[^"]*" id="ev-(\d+)"', html)]
    assert moment == max(positions)
    assert "claimed, generation 1" in html  # the views' state then


def test_a_tenant_report_indexes_its_sessions(story: Story, run: Run, tmp_path: Path) -> None:
    """TENANT alone: every session of the tenant is drawn."""
    out = tmp_path / "r.html"
    ran = run("report", story.tenant, "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    assert f'data-session="{story.session}"' in out.read_text()


def test_an_unknown_session_is_a_usage_error(story: Story, run: Run, tmp_path: Path) -> None:
    """A session the tenant never wrote: exit 2, nothing written."""
    out = tmp_path / "r.html"
    ran = run("report", story.tenant, "no-such-session", "-o", str(out))
    assert (EXIT_USAGE, False) == (ran.status, out.exists())
    assert "unknown session or thread 'no-such-session'" in ran.err


@mutating
def test_a_broken_link_is_highlighted_and_exits_1(
    own_story: Story, own_run: Run, target: BackendTarget, tmp_path: Path
) -> None:
    """A stored event changed behind the log's back: the page is written, its verify
    badge is red, the event's row is marked, and the exit status is 1."""
    stream = f"session:{own_story.session}"
    where = "WHERE tenant_id = $1 AND stream_id = $2 AND stream_version = 2"
    data = bytes(execute(target, f"SELECT data FROM events {where}", own_story.tenant, stream))
    execute(target, f"UPDATE events SET data = {_blob(target, data.replace(b'1', b'7'))} "
                    f"{where}", own_story.tenant, stream)
    out = tmp_path / "r.html"
    ran = own_run("report", own_story.tenant, own_story.session, "-o", str(out))
    html = out.read_text()
    assert EXIT_FINDINGS == ran.status
    assert 'data-ok="false"' in html
    assert f'<tr class="ev broken" id="ev-{own_story.positions["c1"]}"' in html


def _index_rows(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr class="subject[^"]*" data-subject="([^"]+)">(.*?)</tr>',
                           html, re.S))


@mutating
@pytest.mark.parametrize("stream", ["session", "batch"])
def test_a_tampered_session_is_flagged_in_the_tenant_s_list(
    own_story: Story, own_run: Run, target: BackendTarget, tmp_path: Path, stream: str
) -> None:
    """An event of one session (or of its interrupt batch) changed behind the log's back:
    the tenant's list of sessions flags that session, with what verify found, and leaves
    the untouched one unflagged."""
    asyncio.run(_second_session(target, own_story.tenant))
    name = (f"session:{own_story.session}" if stream == "session"
            else f"interrupt-batch:{own_story.batch_id}")
    where = "WHERE tenant_id = $1 AND stream_id = $2 AND stream_version = 2"
    data = bytes(execute(target, f"SELECT data FROM events {where}", own_story.tenant, name))
    execute(target, f"UPDATE events SET data = {_blob(target, data + b' ')} {where}",
            own_story.tenant, name)
    out = tmp_path / "r.html"
    ran = own_run("report", own_story.tenant, "-o", str(out))
    assert EXIT_FINDINGS == ran.status
    rows = _index_rows(out.read_text())
    assert "verify found: hash_mismatch" in rows[own_story.session]
    assert "verify found" not in rows["untouched"]


async def _second_session(target: BackendTarget, tenant: str) -> None:
    async with target.open() as log:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id=tenant, session_id="untouched", run_id=uuid.uuid4(),
            checkpoint_id="c0", state={"fine": True}))
        await log.wait_readable()
