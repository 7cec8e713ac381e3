"""Two real processes save one Agent Framework workflow through fenced savers
(``EventlogCheckpointStorage(fenced=True)``): exactly one wins each parent, the loser is
told why, the lineage never forks, and a save after another process deleted its parent is
refused (the MAF twin of tests/test_fenced_processes.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from tests.conftest import CITUS, BackendTarget

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TENANT = "acme"


class Child:
    """One `tests.procs.fenced_maf_saver` process: a command in, one JSON line out."""

    def __init__(self, target: BackendTarget, workflow: str, name: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.procs.fenced_maf_saver", target.url, target.schema,
             TENANT, workflow, name],
            cwd=ROOT, env=ENV, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        assert {"ready": True} == self.line()

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        assert text, f"child ended (exit code {self.process.poll()})"
        return dict(json.loads(text))

    def ask(self, command: str) -> dict[str, Any]:
        self.send(command)
        return self.line()

    def until_done(self) -> list[dict[str, Any]]:
        lines = []
        while "done" not in (line := self.line()):
            lines.append(line)
        return lines

    def close(self) -> None:
        if self.process.poll() is None:
            self.send("quit")
            self.process.wait(timeout=30)


@pytest.fixture
def children(target: BackendTarget) -> Any:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    pair = (Child(target, workflow, "a"), Child(target, workflow, "b"))
    yield workflow, pair
    for child in pair:
        child.close()


async def lineage(target: BackendTarget, workflow: str) -> list[tuple[str, str | None]]:
    """The workflow's checkpoints in log order, each with its parent; and verify."""
    async with open_log(target.url, **target.options()) as log:
        found = await log.threads.page(TENANT, workflow, namespace="", payloads=False)
        assert (await log.verify(TENANT)).ok
    return [(c.checkpoint_id, c.parent_id) for c in sorted(found, key=lambda c: c.position)]


def assert_linear(links: list[tuple[str, str | None]]) -> None:
    """Every checkpoint's parent is the one saved before it: one lineage, no fork."""
    assert [None, *(checkpoint for checkpoint, _ in links[:-1])] == [
        parent for _, parent in links]


@pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
async def test_two_processes_racing_for_each_parent_one_wins(
    target: BackendTarget, children: Any
) -> None:
    """Both read the same latest checkpoint and save a child of it, round after round:
    exactly one wins each parent, the other is refused naming its parent and the
    checkpoint that beat it, and the workflow is one lineage."""
    workflow, pair = children
    wins = []
    for round_ in range(10):
        heads = {child.ask("read")["head"] for child in pair}
        assert 1 == len(heads)
        for child in pair:
            child.send("save")
        outcomes = [child.line() for child in pair]
        won = [outcome for outcome in outcomes if "won" in outcome]
        lost = [outcome for outcome in outcomes if "lost" in outcome]
        if round_ == 0:  # two first saves without a parent: two new runs, both accepted
            assert (2, 0) == (len(won), len(lost)), outcomes
            pair[1].ask("delete")
            pair[0].ask("read")
            assert "won" in pair[0].ask("save")
            continue
        assert (1, 1) == (len(won), len(lost)), outcomes
        assert (lost[0]["expected"], lost[0]["head"], lost[0]["thread"]) == (
            lost[0]["parent"], won[0]["won"], workflow)
        wins.append(won[0]["won"])
    links = await lineage(target, workflow)
    assert wins == [checkpoint for checkpoint, _ in links][1:]
    assert_linear(links)


@pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
async def test_two_processes_saving_freely_never_fork_the_lineage(
    target: BackendTarget, children: Any
) -> None:
    """Each reads the latest and saves a child of it as fast as it can (after one root):
    every accepted save's parent was the latest, every refused one named a parent that
    already had a child, and the store holds exactly the accepted saves."""
    workflow, (first, second) = children
    first.ask("read")
    assert "won" in first.ask("save")
    for child in (first, second):
        child.send("run 25")
    reports = [line for child in (first, second) for line in child.until_done()]
    won = {line["won"]: line["parent"] for line in reports if "won" in line}
    links = await lineage(target, workflow)
    assert won == dict(links[1:])
    assert_linear(links)
    parents = {parent for _, parent in links}
    assert all(line["parent"] in parents and line["head"] != line["parent"]
               for line in reports if "lost" in line)
    assert len(won) + sum("lost" in line for line in reports) == 50


@pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
async def test_a_late_save_after_another_process_deletes_is_refused(
    target: BackendTarget, children: Any
) -> None:
    """A process that read the latest checkpoint before another deleted the workflow's
    checkpoints cannot save a child of it: nothing comes back."""
    workflow, (late, deleter) = children
    late.ask("read")
    assert "won" in late.ask("save")
    late.ask("read")
    assert "won" in late.ask("save")
    late.ask("read")
    assert {"deleted": 2} == deleter.ask("delete")
    saved = late.ask("save")
    assert ("lost", None) == (next(iter(saved)), saved["head"])
    assert [] == await lineage(target, workflow)
    deleter.ask("read")
    assert "won" in deleter.ask("save")  # a new run, without a parent, starts again
