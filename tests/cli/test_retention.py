"""``eventlog retention apply`` and ``eventlog hold`` (on SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.interrupts import event_count
from tests.cli.helpers import Run, TickingClock
from tests.conftest import BackendTarget

mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


def _seed(target: BackendTarget, tenant: str = "acme", sessions: tuple[str, ...] = ("a", "b"),
          count: int = 3) -> None:
    async def write() -> None:
        async with open_log(target.url, clock=TickingClock(LONG_AGO),
                            **target.options()) as log:
            for session in sessions:
                for n in range(count):
                    await log.checkpoints.create(record(
                        session, {"n": n}, tenant_id=tenant, checkpoint_id=f"{session}-{n}"))
    asyncio.run(write())


def _events(target: BackendTarget) -> int:
    async def count() -> int:
        async with open_log(target.url, **target.options()) as log:
            return await event_count(log)
    return asyncio.run(count())


@mutating
def test_apply_keep_latest_prints_the_pass_as_json(target: BackendTarget, own_run: Run) -> None:
    """--keep-latest 1 purges all but each session's latest; --json names the ids."""
    _seed(target)
    ran = own_run("retention", "apply", "acme", "--keep-latest", "1", "--json")
    (report,) = ran.json()["passes"]
    assert (EXIT_OK, 4, {"a": ["a-0", "a-1"], "b": ["b-0", "b-1"]}, False) == (
        ran.status, report["checkpoints"],
        {item["id"]: item["checkpoints"] for item in report["purged"]}, report["dry_run"])


@mutating
def test_a_dry_run_writes_nothing(target: BackendTarget, own_run: Run) -> None:
    """--dry-run prints the plan and appends no event."""
    _seed(target)
    before = _events(target)
    ran = own_run("retention", "apply", "acme", "--older-than", "30", "--dry-run")
    assert (EXIT_OK, before) == (ran.status, _events(target))
    assert "Retention plan (dry run): acme" in ran.out
    assert "session a: 3 records (emptied)" in ran.out


@mutating
def test_hold_keeps_a_subject_until_released(target: BackendTarget, own_run: Run) -> None:
    """hold, --list, a pass that keeps the held session, --release, a pass that purges."""
    _seed(target)
    assert EXIT_OK == own_run("hold", "acme", "a", "--reason", "case 7").status
    listed = own_run("hold", "--list", "acme", "--json").json()
    kept = own_run("retention", "apply", "acme", "--keep-latest", "1", "--json").json()
    released = own_run("hold", "--release", "acme", "a", "--json").json()
    purged = own_run("retention", "apply", "acme", "--keep-latest", "1", "--json").json()
    assert ([("a", "case 7")], ["a"], ["b"], True, ["a"]) == (
        [(h["subject"], h["reason"]) for h in listed["holds"]], kept["passes"][0]["held"],
        [p["id"] for p in kept["passes"][0]["purged"]], released["released"],
        [p["id"] for p in purged["passes"][0]["purged"]])
    assert EXIT_OK == own_run("verify").status


@mutating
def test_a_policy_file_applies_each_tenants_policy(
    target: BackendTarget, own_run: Run, tmp_path: Path
) -> None:
    """A TOML policy file: one pass per tenant, each with its own policy."""
    _seed(target, "acme")
    _seed(target, "globex")
    policy = tmp_path / "retention.toml"
    policy.write_text("[tenants.acme]\nkeep_latest = 2\n\n[tenants.globex]\n"
                      "older_than_days = 30\n")
    ran = own_run("retention", "apply", "--policy", str(policy), "--json")
    assert (EXIT_OK, {"acme": 2, "globex": 6}) == (
        ran.status, {p["tenant"]: p["checkpoints"] for p in ran.json()["passes"]})


@pytest.mark.parametrize(("text", "named"), [
    ('{"tenants": {"acme": {"keep_latest": 0}}}', "tenants.acme.keep_latest"),
    ('{"tenants": {"acme": {"older_than": 3}}}', "tenants.acme.older_than"),
    ('{"tenants": {"acme": {}}}', "tenants.acme"),
    ('{"tenant": {}}', "tenant"),
    ('{"tenants": {"acme": {"older_than_days": "3"}}}', "tenants.acme.older_than_days"),
    ("not json", "policy"),
])
@mutating
def test_a_bad_policy_file_is_refused_naming_the_field(
    target: BackendTarget, own_run: Run, tmp_path: Path, text: str, named: str
) -> None:
    """Each mistake names its place in the file, and nothing is written."""
    _seed(target)
    before = _events(target)
    policy = tmp_path / "retention.json"
    policy.write_text(text)
    ran = own_run("retention", "apply", "--policy", str(policy))
    assert (EXIT_USAGE, True, before) == (ran.status, named in ran.err, _events(target))


@mutating
def test_apply_needs_a_policy(target: BackendTarget, own_run: Run) -> None:
    """Neither --older-than nor --keep-latest: a usage error saying so."""
    _seed(target)
    ran = own_run("retention", "apply", "acme")
    assert (EXIT_USAGE, True) == (ran.status, "--older-than" in ran.err)


@mutating
def test_the_timeline_tells_a_pass(target: BackendTarget, own_run: Run) -> None:
    """A session's timeline shows the pass's removal in words, with the ids it purged."""
    _seed(target)
    own_run("retention", "apply", "acme", "--keep-latest", "1")
    ran = own_run("timeline", "acme", "a")
    assert (EXIT_OK, True, True) == (ran.status, "retention: 2 checkpoints past" in ran.out,
                                     "a-0, a-1" in ran.out)


@mutating
def test_a_threads_timeline_tells_a_pass(target: BackendTarget, own_run: Run) -> None:
    """A framework thread's timeline names the pass's removal as retention."""
    from eventlog.checkpoints.thread_records import Payload

    async def write() -> None:
        async with open_log(target.url, clock=TickingClock(LONG_AGO),
                            **target.options()) as log:
            for n in range(3):
                await log.threads.put("acme", "th", f"{n:04d}",
                                      state=Payload("json", b'{"n": %d}' % n))
    asyncio.run(write())
    own_run("retention", "apply", "acme", "--keep-latest", "1")
    ran = own_run("timeline", "acme", "th")
    assert (EXIT_OK, True) == (ran.status, "retention: 2 checkpoints past" in ran.out)


@mutating
def test_an_unknown_tenant_is_refused_before_any_pass(
    target: BackendTarget, own_run: Run, tmp_path: Path
) -> None:
    """A policy file naming a tenant with no events runs no pass at all (a typo must not
    purge the others' data first, nor start a stream for the misspelt tenant)."""
    _seed(target)
    before = _events(target)
    policy = tmp_path / "p.json"
    policy.write_text('{"tenants": {"acme": {"keep_latest": 1}, "acne": {"keep_latest": 1}}}')
    ran = own_run("retention", "apply", "--policy", str(policy))
    held = own_run("hold", "acne", "x")
    assert (EXIT_USAGE, True, EXIT_USAGE, before) == (
        ran.status, "unknown tenant 'acne'" in ran.err, held.status, _events(target))
