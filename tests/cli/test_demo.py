"""``eventlog demo``: what it recorded, read back through the library (not its prose)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK
from eventlog.records import RecordedEvent
from projections import compare_views
from tests.cli.helpers import Run, tenant_events
from tests.conftest import BackendTarget
from tests.procs.settle import settle

pytestmark = pytest.mark.examples  # the demo run as a user would, in subprocesses

EVENTLOG = Path(sys.executable).with_name("eventlog")

BATCH_EVENTS = [
    ("interrupt.batch_created", None), ("interrupt.batch_claimed", 1),
    ("interrupt.batch_claimed", 2), ("interrupt.capture_started", 2),
    ("interrupt.effect_started", 2), ("interrupt.capture_completed", 2),
    ("interrupt.batch_finalized", 2),
]
"""Two claims (the second tab's rejected answer appended none), one dispatch marker,
one finish by the live generation (worker 1's stale finish appended nothing)."""


def demo_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``eventlog demo`` in ``cwd`` with no EVENTLOG_URL set."""
    env = {k: v for k, v in os.environ.items() if k != "EVENTLOG_URL"}
    return subprocess.run([str(EVENTLOG), "demo", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def fields(event: RecordedEvent) -> dict[str, Any]:
    """An event's stored fields."""
    decoded: dict[str, Any] = msgspec.json.decode(event.data)
    return decoded


def assert_demo_recorded(target: BackendTarget, session: str, batch_id: str) -> None:
    """The session's and the batch's events are exactly the story's, and all verifies."""
    events = asyncio.run(tenant_events(target, "demo"))
    checkpoints = [fields(e) for e in events if e.stream_id == f"session:{session}"]
    assert ["checkpoint_created"] * 7 == [c["type"] for c in checkpoints]
    ids = [c["checkpoint_id"] for c in checkpoints]
    minted = ids[3]
    assert ["plan", "search-flights", "pick-flight", minted, "pick-flight",
            "request-approval", "booked"] == ids
    assert [0, 1, 2, 1, 2, 3, 4] == [c["step"] for c in checkpoints]
    runs = [c["run_id"] for c in checkpoints]
    assert [runs[0]] * 3 + [runs[3]] * 4 == runs
    assert runs[0] != runs[3]
    assert ("plan", minted) == (checkpoints[3]["parent_id"], checkpoints[4]["parent_id"])
    batch = [(e.type, fields(e).get("generation")) for e in events
             if e.stream_id == f"interrupt-batch:{batch_id}"]
    assert BATCH_EVENTS == batch
    assert asyncio.run(_verified(target))


async def _verified(target: BackendTarget) -> bool:
    async with open_log(target.url, upgrade=False, **target.options()) as log:
        await settle(log)
        return (await log.verify()).ok and not await compare_views(log)


def test_demo_process_on_the_default_sqlite_file(tmp_path: Path) -> None:
    """`eventlog demo` with no URL writes ./eventlog.db; run twice it plays two sessions,
    each recorded exactly, and recorded times never go backwards in the log."""
    first = demo_process(tmp_path, "--json")
    second = demo_process(tmp_path, "--json")
    assert (EXIT_OK, EXIT_OK) == (first.returncode, second.returncode), first.stderr
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    runs = [json.loads(first.stdout), json.loads(second.stdout)]
    assert runs[0]["session"] != runs[1]["session"]
    for played in runs:
        assert_demo_recorded(target, played["session"], played["batch_id"])
        assert played["verify"]["ok"]
        assert played["clock"]["simulated"]
        assert played["clock"]["started"] < played["clock"]["ended"]
        assert Path(played["report"]).parent == tmp_path
        assert played["session"] in Path(played["report"]).read_text()
    times = [e.recorded_at for e in asyncio.run(tenant_events(target, "demo"))]
    assert times == sorted(times)


def test_demo_for_people(tmp_path: Path) -> None:
    """Without --json it prints the story and the timeline, exit 0, names the session it
    played (which is then in the log) and ends with the path of the report it wrote."""
    played = demo_process(tmp_path)
    assert EXIT_OK == played.returncode, played.stderr
    session = played.stdout.split("session ", 1)[1].split(",", 1)[0]
    last = played.stdout.strip().splitlines()[-1]
    report = tmp_path / f"eventlog-report-demo-{session}.html"
    assert f"Incident report: {report} (open it in a browser)" == last
    assert report.exists()
    assert "The clock is simulated" in played.stdout
    assert "on the simulated clock; the wall clock says" in played.stdout
    timeline = subprocess.run([str(EVENTLOG), "timeline", "demo", session, "--json"],
                              cwd=tmp_path, capture_output=True, text=True, check=False)
    story = json.loads(timeline.stdout)
    assert (EXIT_OK, 7, 2) == (timeline.returncode, story["checkpoints"], story["duplicates"])


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
def test_demo_on_postgresql(
    target: BackendTarget, own_run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--url postgresql://…: the same story recorded on the server."""
    monkeypatch.chdir(tmp_path)  # where the demo writes its report
    ran = own_run("demo", "--json")
    assert EXIT_OK == ran.status, ran.err
    played = ran.json()
    assert_demo_recorded(target, played["session"], played["batch_id"])


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def readme_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """The demo run as the README's first command runs it: by a relative path to the
    virtualenv's script, which is not on PATH. Its directory, output and environment."""
    cwd = tmp_path_factory.mktemp("readme")
    env = {k: v for k, v in os.environ.items() if k != "EVENTLOG_URL"}
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep)
                                  if Path(part).resolve() != EVENTLOG.parent.resolve())
    script = os.path.relpath(EVENTLOG, cwd)
    played = subprocess.run([script, "demo"], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert EXIT_OK == played.returncode, played.stderr
    return cwd, played.stdout, env


def test_look_closer_names_the_command_as_it_was_run(
    readme_setup: tuple[Path, str, dict[str, str]]
) -> None:
    """Each hint starts with the path the demo was started by (eventlog is not on PATH)."""
    cwd, out, _ = readme_setup
    hints = out.split("Look closer:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [os.path.relpath(EVENTLOG, cwd)] * 6 == [hint.split()[0] for hint in hints]


def test_look_closer_hints_run_as_printed(
    readme_setup: tuple[Path, str, dict[str, str]]
) -> None:
    """Every hint, pasted into a shell in the same directory, exits 0."""
    cwd, out, env = readme_setup
    hints = out.split("Look closer:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    statuses = [subprocess.run(hint, shell=True, cwd=cwd, env=env, capture_output=True,
                               timeout=120, check=False).returncode for hint in hints]
    assert [EXIT_OK] * 6 == statuses


def test_what_the_demo_and_its_hints_write_is_ignored_by_git(
    readme_setup: tuple[Path, str, dict[str, str]]
) -> None:
    """The database, the reports (as-of-claim.html too): none shows in `git status`."""
    cwd, out, env = readme_setup
    hints = out.split("Look closer:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    report = next(hint for hint in hints if " report " in hint)
    subprocess.run(report, shell=True, cwd=cwd, env=env, capture_output=True, timeout=120,
                   check=True)
    written = sorted(path.name for path in cwd.iterdir())
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *written], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.split()
    assert written == sorted(ignored)
