"""``eventlog timeline`` and ``eventlog inspect`` over a real story."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import msgspec
import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK
from tests.cli.helpers import START, Run, Story, tenant_events
from tests.conftest import BackendTarget
from tests.procs.settle import settle

Seeded = tuple[BackendTarget, Story]
mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)

BATCH_STORY = [
    ("batch created", None), ("claimed", 1), ("claimed", 2), ("capture started", 2),
    ("effect started", 2), ("capture completed", 2), ("finalized", 2),
]
"""The batch's entries: the rejected answer and the stale finish appended nothing."""


def token_digests(target: BackendTarget, story: Story) -> list[str]:
    """The token digests the claims stored (which the command must never print)."""
    return [
        msgspec.json.decode(event.data)["token_digest"]
        for event in asyncio.run(tenant_events(target, story.tenant))
        if event.type == "interrupt.batch_claimed"
    ]


def timeline(run: Run, story: Story, *args: str) -> dict[str, Any]:
    """The JSON timeline of the story's session."""
    ran = run("timeline", story.tenant, story.session, "--json", *args)
    assert EXIT_OK == ran.status, ran.err
    result: dict[str, Any] = ran.json()
    return result


def test_timeline_tells_the_session_in_log_order(story: Story, run: Run) -> None:
    """Runs, checkpoints with the replayed one marked, the batch's claims by generation."""
    result = timeline(run, story)
    entries = result["entries"]
    assert [e["position"] for e in entries] == sorted(e["position"] for e in entries)
    assert (2, 5, 1, 0) == (len(result["runs"]), result["checkpoints"], result["duplicates"],
                            result["tombstones"])
    checkpoints = [(e["lane"], e["data"]["checkpoint_id"], e["duplicate_of"])
                   for e in entries if e["type"] == "checkpoint_created"]
    assert [("run 1", "c0", None), ("run 1", "c1", None), ("run 1", "c2", None),
            ("run 2", "c2", story.positions["c2"]), ("run 2", "c3", None)] == checkpoints
    duplicate = next(e for e in entries if e["duplicate_of"] is not None)
    assert f"same checkpoint id as #{story.positions['c2']}" in duplicate["details"]
    assert BATCH_STORY == [(e["what"], e["data"].get("generation"))
                           for e in entries if e["lane"] == "batch 1"]


def test_timeline_never_shows_a_token(seeded: Seeded, story: Story, run: Run) -> None:
    """Claims appear by generation; their token digests never appear, for people or
    scripts."""
    digests = token_digests(seeded[0], story)
    people = run("timeline", story.tenant, story.session).out
    scripts = run("timeline", story.tenant, story.session, "--json").out
    assert 2 == len(digests)
    assert [] == [d for d in digests if d in people or d in scripts]
    assert "generation 2" in people


def test_timeline_for_people(story: Story, run: Run) -> None:
    """A headline with the counts, then a table naming the duplicate."""
    out = run("timeline", story.tenant, story.session).out
    assert (f"Session {story.session} of tenant {story.tenant}: 2 runs, 5 checkpoints "
            "(1 duplicate), 1 interrupt batch, 0 tombstones") in out.splitlines()[0]
    assert "checkpoint (duplicate)" in out


@mutating
def test_timeline_shows_a_tombstone(target: BackendTarget, own_story: Story, own_run: Run) -> None:
    """After a delete, the tombstone is the session's last entry."""
    asyncio.run(_delete(target, own_story))
    entries = timeline(own_run, own_story)["entries"]
    assert ("session", "tombstone", "session_deleted") == (
        entries[-1]["lane"], entries[-1]["what"], entries[-1]["type"])


async def _delete(target: BackendTarget, story: Story) -> None:
    async with open_log(target.url, **target.options()) as log:
        assert 5 == await log.checkpoints.delete(story.tenant, story.session)


def test_inspect_shows_the_batch_and_its_whole_audit_trail(
    seeded: Seeded, story: Story, run: Run
) -> None:
    """State, generation, effect, capture; every event of the batch; no token."""
    ran = run("inspect", story.tenant, story.batch_id, "--json")
    result = ran.json()
    batch = result["batch"]
    assert (EXIT_OK, "finalized", 2, True, "completed") == (
        ran.status, batch["state"], batch["generation"], batch["effect_started"],
        batch["capture_state"])
    assert ["interrupt.batch_created", "interrupt.batch_claimed", "interrupt.batch_claimed",
            "interrupt.capture_started", "interrupt.effect_started",
            "interrupt.capture_completed", "interrupt.batch_finalized"] == [
        entry["type"] for entry in result["audit"]]
    people = run("inspect", story.tenant, story.batch_id).out
    assert [] == [d for d in token_digests(seeded[0], story) if d in ran.out or d in people]
    assert "Audit trail" in people
    assert "finalized" in people


@mutating
def test_a_retired_batch_is_still_inspected_and_found_by_scan(
    target: BackendTarget, own_story: Story, own_run: Run
) -> None:
    """After cleanup retires the batch from the views, inspect reads its stream, and
    timeline --scan (not the view-based default) still finds it."""
    asyncio.run(_retire(target))
    inspected = own_run("inspect", own_story.tenant, own_story.batch_id, "--json").json()
    assert (True, "interrupt.batch_retired") == (inspected["retired"],
                                                 inspected["audit"][-1]["type"])
    assert [] == timeline(own_run, own_story)["batches"]
    scanned = timeline(own_run, own_story, "--scan")
    assert ([own_story.batch_id], "retired") == (
        [b["batch_id"] for b in scanned["batches"]], scanned["entries"][-1]["what"])


async def _retire(target: BackendTarget) -> None:
    later = START + timedelta(days=90)
    async with open_log(target.url, clock=lambda: later, **target.options()) as log:
        assert 1 == (await log.interrupts.cleanup()).retired
        await settle(log)
