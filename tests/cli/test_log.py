"""``eventlog log``: filters, JSON Lines, and ``--follow`` seeing a late event."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_OK, EXIT_USAGE
from tests.cli.helpers import Run, Story, tenant_events, url_args
from tests.conftest import BackendTarget
from tests.procs.settle import settle

EVENTLOG = Path(sys.executable).with_name("eventlog")
Seeded = tuple[BackendTarget, Story]


def shown(run: Run, *args: str) -> list[dict[str, Any]]:
    """The events ``log --json ARGS`` printed (the command must succeed)."""
    ran = run("log", "--json", *args)
    assert EXIT_OK == ran.status, ran.err
    return ran.json_lines()


def keys(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(tenant, stream, version) of each shown event, in order."""
    return [(e["tenant_id"], e["stream_id"], e["version"]) for e in events]


def test_all_events_in_log_order(seeded: Seeded, story: Story, run: Run) -> None:
    """Without filters every event is shown once, in log order, with its envelope."""
    target = seeded[0]
    expected = [*asyncio.run(tenant_events(target, story.tenant)),
                *asyncio.run(tenant_events(target, story.other_tenant))]
    printed = shown(run)
    assert sorted(e.position for e in expected) == sorted(e["position"] for e in printed)
    assert [e["position"] for e in printed] == sorted(e["position"] for e in printed)
    first = next(e for e in printed if e["position"] == expected[0].position)
    assert (expected[0].hash.hex(), expected[0].type, str(expected[0].event_id)) == (
        first["hash"], first["type"], first["event_id"])


def test_tenant_filter(seeded: Seeded, story: Story, run: Run) -> None:
    """--tenant shows exactly that tenant's events."""
    target = seeded[0]
    expected = asyncio.run(tenant_events(target, story.tenant))
    assert [(e.tenant_id, e.stream_id, e.version) for e in expected] == keys(
        shown(run, "--tenant", story.tenant))


def test_session_filter_includes_its_batches_and_no_other_tenant(
    story: Story, run: Run
) -> None:
    """--session shows the session's checkpoints and its batch's events, and not the
    other tenant's checkpoints under the same session id."""
    printed = shown(run, "--tenant", story.tenant, "--session", story.session)
    streams = {e["stream_id"] for e in printed}
    assert {f"session:{story.session}", f"interrupt-batch:{story.batch_id}"} == streams
    assert {story.tenant} == {e["tenant_id"] for e in printed}


def test_stream_and_type_filters(story: Story, run: Run) -> None:
    """--stream picks one stream; --type (repeatable) picks event types."""
    stream = f"interrupt-batch:{story.batch_id}"
    claims = shown(run, "--tenant", story.tenant, "--stream", stream,
                   "--type", "interrupt.batch_claimed", "--type", "interrupt.effect_started")
    assert ["interrupt.batch_claimed", "interrupt.batch_claimed",
            "interrupt.effect_started"] == [e["type"] for e in claims]
    assert [1, 2, 2] == [e["data"]["generation"] for e in claims]


def test_claims_never_show_token_material(story: Story, run: Run) -> None:
    """A claim's token digest is masked in the output."""
    claim = shown(run, "--tenant", story.tenant, "--type", "interrupt.batch_claimed")[0]
    assert "(redacted)" == claim["data"]["token_digest"]


def test_position_range_and_limit(story: Story, run: Run) -> None:
    """--from-position/--to-position bound the positions; --limit stops early."""
    low, high = story.positions["c1"], story.positions["c3"]
    printed = shown(run, "--tenant", story.tenant, "--from-position", str(low),
                    "--to-position", str(high))
    assert [story.positions[n] for n in ("c1", "c2", "c2 again", "c3")] == [
        e["position"] for e in printed]
    assert 2 == len(shown(run, "--tenant", story.tenant, "--limit", "2"))


def test_time_range(seeded: Seeded, story: Story, run: Run) -> None:
    """--since/--until bound the recorded times (inclusive)."""
    target = seeded[0]
    events = asyncio.run(tenant_events(target, story.tenant))
    since, until = events[1].recorded_at, events[3].recorded_at
    printed = shown(run, "--tenant", story.tenant, "--since", since.isoformat(),
                    "--until", until.isoformat())
    assert [e.position for e in events[1:4]] == [e["position"] for e in printed]


def test_people_get_one_line_per_event(story: Story, run: Run,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --json each event is one line (on a terminal wide enough for its
    stream): position, time, stream@version, type."""
    monkeypatch.setenv("COLUMNS", "160")
    ran = run("log", "--tenant", story.tenant, "--stream", f"session:{story.session}")
    lines = ran.out.splitlines()
    assert 5 == len(lines)
    assert f"2030-01-01T12:00:01.000000Z {story.tenant}/session:{story.session}@1 " \
           "checkpoint_created" in lines[0]


def test_max_wait_needs_follow(run: Run) -> None:
    """--max-wait without --follow is a usage error."""
    assert EXIT_USAGE == run("log", "--max-wait", "1").status


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_follow_sees_an_event_appended_after_it_started(
    target: BackendTarget, own_story: Story
) -> None:
    """A real `eventlog log --follow --from-start` process prints the existing events,
    then one appended while it waits, and stops at --limit (gap-safe cursor, bounded
    wait)."""
    before = len(asyncio.run(tenant_events(target, own_story.tenant)))
    follower = subprocess.Popen(
        [str(EVENTLOG), "log", "--follow", "--from-start", "--json", "--tenant",
         own_story.tenant,
         "--limit", str(before + 1), "--poll-interval", "0.05", "--max-wait", "30",
         *url_args(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert follower.stdout is not None
    seen = [json.loads(follower.stdout.readline()) for _ in range(before)]
    appended = asyncio.run(_append_late(target, own_story))
    # Not communicate(): it reads the pipe's descriptor and would skip what readline's
    # wrapper already holds.
    out = follower.stdout.read()
    err = follower.stderr.read()  # type: ignore[union-attr]
    follower.wait(timeout=60)
    late = [json.loads(line) for line in out.splitlines()]
    assert (EXIT_OK, before, 1) == (follower.returncode, len(seen), len(late)), err
    assert (appended, "checkpoint_created") == (late[0]["position"], late[0]["type"])


async def _append_late(target: BackendTarget, story: Story) -> int:
    async with open_log(target.url, **target.options()) as log:
        await asyncio.sleep(0.3)  # the follower is now polling an exhausted cursor
        record = await log.checkpoints.create(CheckpointRecord(
            tenant_id=story.tenant, session_id=story.session, run_id=uuid.uuid4(),
            checkpoint_id="late", state={"late": True}))
        await settle(log)
        assert record.position is not None
        return record.position


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_follow_starts_at_the_end_as_tail_does(target: BackendTarget, own_story: Story) -> None:
    """Without --from-start a follower prints only what commits after it said it is
    following: the one event appended then, none of those already there."""
    follower = subprocess.Popen(
        [str(EVENTLOG), "log", "--follow", "--json", "--tenant", own_story.tenant,
         "--limit", "1", "--poll-interval", "0.05", "--max-wait", "30", *url_args(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert follower.stderr is not None
    assert follower.stdout is not None
    waiting = follower.stderr.readline()
    appended = asyncio.run(_append_late(target, own_story))
    out = follower.stdout.read()  # its own wrapper, as above
    follower.wait(timeout=60)
    late = [json.loads(line) for line in out.splitlines()]
    assert ("following", EXIT_OK, [appended]) == (
        waiting.split(":")[0], follower.returncode, [event["position"] for event in late])


def test_follow_stops_after_max_wait(story: Story, run: Run) -> None:
    """With nothing new, --follow gives up after --max-wait seconds, exit 0, having shown
    nothing (it starts at the end)."""
    ran = run("log", "--follow", "--json", "--tenant", story.tenant, "--max-wait", "0.2",
              "--poll-interval", "0.05")
    assert (EXIT_OK, []) == (ran.status, ran.json_lines())


def test_follow_says_why_it_stopped(story: Story, run: Run) -> None:
    """When --max-wait ends a follower, its last line on stderr says so."""
    ran = run("log", "--follow", "--tenant", story.tenant, "--max-wait", "0.2",
              "--poll-interval", "0.05")
    assert "stopped following: no new event for 0.2 s (--max-wait)" == (
        ran.err.strip().splitlines()[-1])


def test_from_start_replays_before_following(story: Story, run: Run) -> None:
    """--from-start prints the tenant's events already there, then follows."""
    ran = run("log", "--follow", "--from-start", "--json", "--tenant", story.tenant,
              "--max-wait", "0.1", "--poll-interval", "0.05")
    assert shown(run, "--tenant", story.tenant) == ran.json_lines()


def test_from_start_needs_follow(run: Run) -> None:
    """--from-start without --follow is a usage error."""
    assert EXIT_USAGE == run("log", "--from-start").status




def test_a_type_never_written_and_unknown_is_a_usage_error(story: Story, run: Run) -> None:
    """--type with a name no event has and eventlog does not know: exit 2, saying so,
    with the nearest names."""
    ran = run("log", "--type", "interrupt.batch_claim")
    assert EXIT_USAGE == ran.status
    assert "no event of type 'interrupt.batch_claim' was ever written to this log" in ran.err
    assert "did you mean interrupt.batch_claimed" in ran.err


def test_following_an_unknown_type_does_not_wait_forever(story: Story, run: Run) -> None:
    """--follow with such a type stops once the log is read to its end."""
    ran = run("log", "--follow", "--type", "no.such.type", "--poll-interval", "0")
    assert EXIT_USAGE == ran.status


def test_a_known_type_not_written_yet_is_noted(story: Story, run: Run) -> None:
    """A library type that no event has yet: exit 0, nothing shown, a note on stderr."""
    ran = run("log", "--type", "interrupt.batch_released")
    assert (EXIT_OK, "") == (ran.status, ran.out)
    assert "no event of type 'interrupt.batch_released' has been written" in ran.err
