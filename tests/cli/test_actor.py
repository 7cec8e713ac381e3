"""Who did it, on the command line: ``--actor`` (and ``$EVENTLOG_ACTOR``) for the commands
that append, and the actor shown by ``log`` (and filtered by ``log --actor``), ``timeline``
and ``inspect``."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.testing.interrupts import answer, create
from tests.cli.helpers import Run, make_runner
from tests.conftest import BackendTarget
from tests.procs.settle import settle

RUN = uuid.UUID(int=1)
sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


def record(step: int) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="acme", session_id="s1", run_id=RUN, step=step,
                            state={"step": step})


def build(target: BackendTarget) -> str:
    """Session s1: a checkpoint by alice (the log's actor), one by bob (`acting_as`), one
    by nobody named; an interrupt batch raised by the service and claimed by bob. Returns
    the batch id."""
    async def write() -> str:
        async with open_log(target.url, **target.options(), actor="alice") as log:
            await log.checkpoints.create(record(1))
            with log.acting_as("bob"):
                await log.checkpoints.create(record(2))
        async with open_log(target.url, **target.options()) as log:
            await log.checkpoints.create(record(3))
            with log.acting_as("svc"):
                batch = await create(log, "acme", "s1")
            with log.acting_as("bob"):
                assert (await log.interrupts.try_claim("acme", answer(batch))).claim
            await settle(log)
            return batch.batch_id
    return asyncio.run(write())


@sql_stores
def test_log_json_names_each_events_actor_and_filters_by_it(
    target: BackendTarget, run: Run
) -> None:
    """``log --json`` carries ``actor`` (null when nobody was named); ``--actor`` keeps only
    that principal's events, repeated for several; an unknown one shows nothing."""
    build(target)
    shown = run("log", "--json", "--tenant", "acme")
    assert EXIT_OK == shown.status, shown.err
    assert ["alice", "bob", None, "svc", "bob"] == [e["actor"] for e in shown.json_lines()]
    only = run("log", "--json", "--tenant", "acme", "--actor", "bob")
    both = run("log", "--json", "--tenant", "acme", "--actor", "bob", "--actor", "svc")
    nobody = run("log", "--json", "--tenant", "acme", "--actor", "carol")
    assert (["bob", "bob"], ["bob", "svc", "bob"], []) == (
        [e["actor"] for e in only.json_lines()], [e["actor"] for e in both.json_lines()],
        nobody.json_lines())


@sqlite_only
def test_log_lines_say_who_appended(target: BackendTarget, run: Run) -> None:
    """A line of ``log`` for people says ``by NAME`` after the type; one whose event names
    nobody says nothing of the kind."""
    build(target)
    lines = run("log", "--tenant", "acme", "--full").out.splitlines()
    assert [True, True, False, True, True] == [" by " in line for line in lines]
    assert "checkpoint_created by alice" in lines[0]


@sqlite_only
def test_timeline_shows_who_appended_each_entry(target: BackendTarget, run: Run) -> None:
    """``timeline`` has a ``by`` column (``-`` for nobody named), and its JSON entries an
    ``actor``."""
    build(target)
    table = run("timeline", "acme", "s1")
    assert EXIT_OK == table.status, table.err
    header = next(line for line in table.out.splitlines() if " lane " in line)
    assert " by " in header
    entries = run("timeline", "acme", "s1", "--json").json()["entries"]
    assert ["alice", "bob", None, "svc", "bob"] == [e["actor"] for e in entries]


@sqlite_only
def test_timeline_of_a_log_without_actors_has_no_by_column(
    target: BackendTarget, run: Run
) -> None:
    """A log written before actors (or by nobody named) reads as it always did."""
    async def write() -> None:
        async with open_log(target.url) as log:
            await log.checkpoints.create(record(1))
    asyncio.run(write())
    header = next(line for line in run("timeline", "acme", "s1").out.splitlines()
                  if " lane " in line)
    assert " by " not in header


@sqlite_only
def test_inspect_shows_who_raised_and_who_claimed(target: BackendTarget, run: Run) -> None:
    """``inspect``'s audit trail names each event's actor, for people and in JSON."""
    batch = build(target)
    shown = run("inspect", "acme", batch)
    assert EXIT_OK == shown.status, shown.err
    assert ("svc" in shown.out, "bob" in shown.out) == (True, True)
    audit = run("inspect", "acme", batch, "--json").json()["audit"]
    assert ["svc", "bob"] == [entry["actor"] for entry in audit]


@sqlite_only
def test_a_command_that_appends_acts_as_actor_or_the_environment(
    target: BackendTarget, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import --actor ops`` records ops on what the import itself appends (its record of
    withheld state), while the imported events keep their own actors; without ``--actor``,
    ``$EVENTLOG_ACTOR`` is used."""
    build(target)
    exported = str(tmp_path / "acme.jsonl")
    assert EXIT_OK == run("export", "--tenant", "acme", "--without-state", exported).status
    copies = []
    for name, extra, env in (("a", ["--actor", "ops"], None), ("b", [], "robot")):
        if env is not None:
            monkeypatch.setenv("EVENTLOG_ACTOR", env)
        url = f"sqlite:///{tmp_path / name}.db"
        ran = run("import", exported, *extra, "--url", url, url=False)
        assert EXIT_OK == ran.status, ran.err

        async def actors(url: str = url) -> list[tuple[str, str | None]]:
            async with open_log(url) as log:
                page = await log.read_all(tenant_id="acme")
                return [(e.type, e.actor) for e in page.events]
        copies.append(asyncio.run(actors()))
    for copy, importer in zip(copies, ("ops", "robot"), strict=True):
        assert [a for t, a in copy if t != "state_withheld"] == [
            "alice", "bob", None, "svc", "bob"]
        assert {importer} == {a for t, a in copy if t == "state_withheld"}


@sqlite_only
def test_a_bad_actor_is_a_usage_error(target: BackendTarget, run: Run, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``--actor`` (or ``$EVENTLOG_ACTOR``) the log would refuse exits 2 naming it, and
    no log is created."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    ran = run("cleanup", "--actor", " ", "--url", url, url=False)
    monkeypatch.setenv("EVENTLOG_ACTOR", "a\x07b")
    env = run("cleanup", "--url", url, url=False)
    assert (EXIT_USAGE, True, EXIT_USAGE, True) == (
        ran.status, "--actor" in ran.err, env.status, "EVENTLOG_ACTOR" in env.err)


@sqlite_only
def test_reading_commands_take_no_actor(target: BackendTarget, run: Run) -> None:
    """``verify`` appends nothing, so it has no ``--actor`` option (a usage error)."""
    build(target)
    assert EXIT_USAGE == run("verify", "--actor", "x").status


@sqlite_only
def test_the_report_names_who_appended_each_event(
    target: BackendTarget, run: Run, tmp_path: Path
) -> None:
    """The incident report's principal column shows each event's principal and its "done
    by" column what the event itself says (a claim's generation), apart; and each row's
    full event too."""
    build(target)
    out = tmp_path / "r.html"
    ran = run("report", "acme", "s1", "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    html = out.read_text()
    cells = re.findall(r'<tr class="ev[^"]*" id="ev-\d+"[^>]*>(.*?)</tr>', html, re.S)
    principals = [re.findall(r"<td class=principal>([^<]*)</td>", row)[0] for row in cells]
    done = [re.findall(r"<td class=time>([^<]*)</td>", row)[-1] for row in cells]
    assert ["alice", "bob", "—", "svc", "bob"] == principals
    assert ["", "", "", "", "claim generation 1"] == done
    assert '"actor": "alice"' in html or '"actor":"alice"' in html
