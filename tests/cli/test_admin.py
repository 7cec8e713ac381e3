"""``eventlog migrate``, ``eventlog stats`` and ``eventlog cleanup``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK
from eventlog.interrupts import Interrupt, Operation, Resume, ResumeInput
from eventlog.storage.migrate import head_revision
from tests.cli.helpers import Run, Story, make_runner
from tests.conftest import BackendTarget, fresh_id
from tests.procs.settle import settle

mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


@mutating
def test_migrate_creates_the_schema_and_names_its_revision(
    target: BackendTarget, own_run: Run
) -> None:
    """On an empty database migrate creates every table; run again it changes nothing;
    afterwards the reading commands open it."""
    first = own_run("migrate", "--json")
    again = own_run("migrate")
    assert (EXIT_OK, head_revision()) == (first.status, first.json()["revision"])
    assert f"schema at revision {head_revision()} (up to date)" in again.out
    assert (EXIT_OK, {"tenants": []}) == (own_run("stats", "--json").status,
                                          own_run("stats", "--json").json())


def test_migrate_creates_a_sqlite_file(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    """migrate is the one reading-free command that may create the file (in a directory
    that exists: it makes no directories)."""
    path = tmp_path / "log.db"
    run = make_runner(capsys, BackendTarget("sqlite", f"sqlite:///{path}"))
    assert (EXIT_OK, True) == (run("migrate").status, path.exists())


def test_stats_counts_per_tenant(story: Story, run: Run) -> None:
    """Events, streams, sessions, checkpoints, runs, batches and live state bytes."""
    rows = {row["tenant_id"]: row for row in run("stats", "--json").json()["tenants"]}
    assert {"tenant_id": story.tenant, "events": 12, "streams": 2, "sessions": 1,
            "checkpoints": 5, "runs": 2, "open_batches": 0, "unresolved_batches": 0,
            "state_bytes": 4 * len(b'{"step":0}'), "threads": 0, "thread_checkpoints": 0,
            "thread_bytes": 0} == rows[story.tenant]
    assert (1, 1, len(b'{"other":true}')) == (
        rows[story.other_tenant]["events"], rows[story.other_tenant]["checkpoints"],
        rows[story.other_tenant]["state_bytes"])


def test_stats_of_one_tenant(story: Story, run: Run) -> None:
    """--tenant shows only that tenant, as a table for people."""
    ran = run("stats", "--tenant", story.tenant)
    assert (EXIT_OK, True, False) == (ran.status, story.tenant in ran.out,
                                      story.other_tenant in ran.out)


@mutating
def test_cleanup_expires_leases_and_prints_its_counts(
    target: BackendTarget, own_run: Run
) -> None:
    """Two claims whose leases ran out an hour ago, one after its effect started: one
    pass expires one and marks the other unresolved (stats then counts it), bounded by
    --limit; a second pass finds nothing."""
    tenant = fresh_id("t")
    asyncio.run(_expired_claims(target, tenant))
    first = own_run("cleanup", "--json", "--limit", "10")
    assert (EXIT_OK, 1, 1) == (first.status, first.json()["leases_expired"],
                               first.json()["effects_unresolved"])
    assert {"leases_expired": 0, "effects_unresolved": 0, "approvals_expired": 0,
            "captures_abandoned": 0, "retired": 0} == own_run("cleanup", "--json").json()
    stats = own_run("stats", "--json", "--tenant", tenant).json()["tenants"][0]
    assert (1, 1) == (stats["open_batches"], stats["unresolved_batches"])
    assert "leases expired" in own_run("cleanup").out


async def _expired_claims(target: BackendTarget, tenant: str) -> None:
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    async with open_log(target.url, clock=lambda: an_hour_ago, **target.options()) as log:
        for effect in (False, True):
            batch = await log.interrupts.create(
                tenant, "thread", [Interrupt(id="q", reason="ask")], "c0",
                operation=Operation("op", "1"))
            claim = (await log.interrupts.try_claim(tenant, ResumeInput(
                thread_id="thread", batch_id=batch.batch_id,
                responses=[Resume(interrupt_id="q", status="resolved")]))).claim
            assert claim is not None
            if effect:
                assert await log.interrupts.try_start_effect(claim)
        await settle(log)
