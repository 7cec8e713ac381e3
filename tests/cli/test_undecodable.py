"""An event whose stored bytes no longer decode (``true`` edited to ``fals``): ``verify``
lists it as a finding, and the reading commands carry on past it."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from tests.cli.helpers import Run, Story
from tests.cli.test_verify import _blob, execute
from tests.conftest import BackendTarget

mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


def spoil_first_claim(story: Story, target: BackendTarget) -> str:
    """Edit the first claim's stored bytes so they are no longer JSON; its stream."""
    stream = f"interrupt-batch:{story.batch_id}"
    where = "WHERE tenant_id = $1 AND stream_id = $2 AND stream_version = 2"
    data = bytes(execute(target, f"SELECT data FROM events {where}", story.tenant, stream))
    assert b"true" in data
    execute(target, f"UPDATE events SET data = {_blob(target, data.replace(b'true', b'fals'))}"
                    f" {where}", story.tenant, stream)
    return stream


@mutating
def test_verify_lists_an_undecodable_event(
    own_story: Story, own_run: Run, target: BackendTarget
) -> None:
    """Exit 1, and --json names the event: stream, version, position, type, why."""
    stream = spoil_first_claim(own_story, target)
    ran = own_run("verify", "--json")
    assert EXIT_FINDINGS == ran.status, ran.err
    found = ran.json()["undecodable_events"]
    assert [(stream, 2, own_story.positions["claim 1"], "interrupt.batch_claimed")] == [
        (f["stream_id"], f["version"], f["position"], f["type"]) for f in found]
    assert "malformed" in found[0]["error"]


@mutating
def test_verify_for_people_names_it(own_story: Story, own_run: Run,
                                    target: BackendTarget) -> None:
    """Without --json the finding is a table row, not an error."""
    spoil_first_claim(own_story, target)
    ran = own_run("verify")
    assert EXIT_FINDINGS == ran.status
    assert "Every event decodes as its type: 1 does not" in ran.out
    assert "error:" not in ran.err


@mutating
def test_log_and_timeline_carry_on_past_it(own_story: Story, own_run: Run,
                                           target: BackendTarget) -> None:
    """log shows every event of the tenant, the bad one marked; timeline shows its
    whole story with the bad one as an entry; both exit 0."""
    spoil_first_claim(own_story, target)
    logged = own_run("log", "--tenant", own_story.tenant, "--json")
    events = logged.json_lines()
    assert (EXIT_OK, own_story.positions["finalized"]) == (logged.status, len(events))
    assert [own_story.positions["claim 1"]] == [
        e["position"] for e in events if "undecodable" in e]
    timeline = own_run("timeline", own_story.tenant, own_story.session, "--json")
    whats = [entry["what"] for entry in timeline.json()["entries"]]
    assert (EXIT_OK, "undecodable", "finalized") == (timeline.status, whats[6], whats[-1])


@mutating
def test_inspect_and_report_carry_on_past_it(
    own_story: Story, own_run: Run, target: BackendTarget, tmp_path: Path
) -> None:
    """inspect lists the bad event in the audit trail as undecodable; report draws it as
    an undecodable mark and lists it under verify (exit 1, the page written)."""
    spoil_first_claim(own_story, target)
    inspected = own_run("inspect", own_story.tenant, own_story.batch_id, "--json")
    audit = inspected.json()["audit"]
    assert EXIT_OK == inspected.status
    assert "undecodable" in audit[1]["details"]
    out = tmp_path / "r.html"
    reported = own_run("report", own_story.tenant, own_story.session, "-o", str(out))
    html = out.read_text()
    assert EXIT_FINDINGS == reported.status
    assert f'class="mark k-undecodable broken" data-pos="{own_story.positions["claim 1"]}"' \
        in html
    assert "<b>undecodable</b>" in html
