"""Two real processes write one thread through fenced savers, LangGraph's
(`AsyncEventlogSaver(fenced=True)`) and Agent Framework's
(``EventlogCheckpointStorage(fenced=True)``, whose thread is a workflow): exactly one wins
each parent, the loser is told why, the chain never forks, and a deleted thread stays
deleted (`eventlog.checkpoints.thread_fence`). One harness drives both
(`tests.procs.fenced_saver`)."""

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
TARGETS = pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
SAVERS = pytest.mark.parametrize(("children", "roots"), [("langgraph", 0), ("maf", 1)],
                                 indirect=["children"], ids=["langgraph", "maf"])
"""Both savers; ``roots``: how many checkpoints without a parent a thread starts with (a
LangGraph put without a parent is fenced like any other; a MAF save without one always
starts a new run, so the MAF tests first make one root)."""


class Child:
    """One `tests.procs.fenced_saver` process: a command in, one JSON line out."""

    def __init__(self, target: BackendTarget, framework: str, thread: str, name: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.procs.fenced_saver", framework, target.url,
             target.schema, TENANT, thread, name],
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
def children(request: pytest.FixtureRequest, target: BackendTarget) -> Any:
    """Two processes of one framework (``langgraph`` or ``maf``) on one fresh thread."""
    framework = request.param
    thread = f"{'th' if framework == 'langgraph' else 'wf'}-{uuid.uuid4().hex[:8]}"
    pair = (Child(target, framework, thread, "a"), Child(target, framework, thread, "b"))
    yield thread, pair
    for child in pair:
        child.close()


async def chain(target: BackendTarget, thread: str, roots: int = 0,
                ) -> list[tuple[str, str | None]]:
    """The thread's checkpoints oldest first (LangGraph: by id; MAF, ``roots`` > 0: in log
    order, its lineage), each with its parent; and verify."""
    async with open_log(target.url, **target.options()) as log:
        found = await log.threads.page(TENANT, thread, namespace="", payloads=False)
        assert (await log.verify(TENANT)).ok
    ordered = sorted(found, key=lambda c: c.position) if roots else reversed(found)
    return [(c.checkpoint_id, c.parent_id) for c in ordered]


def assert_linear(links: list[tuple[str, str | None]]) -> None:
    """Every checkpoint's parent is the one before it: one chain, no fork."""
    assert [None, *(checkpoint for checkpoint, _ in links[:-1])] == [
        parent for _, parent in links]


@TARGETS
@SAVERS
async def test_two_processes_racing_for_each_parent_one_wins(
    target: BackendTarget, children: Any, roots: int
) -> None:
    """Both read the same head and put a child of it, round after round: exactly one
    wins each parent, the other is refused with the parent it named and the head that
    beat it, and the thread is one chain."""
    thread, pair = children
    wins = []
    for round_ in range(10 if roots else 12):
        heads = {child.ask("read")["head"] for child in pair}
        assert 1 == len(heads)
        for child in pair:
            child.send("put")
        outcomes = [child.line() for child in pair]
        won = [outcome for outcome in outcomes if "won" in outcome]
        lost = [outcome for outcome in outcomes if "lost" in outcome]
        if roots and round_ == 0:  # two first MAF saves without a parent: two new runs
            assert (2, 0) == (len(won), len(lost)), outcomes
            pair[1].ask("delete")
            pair[0].ask("read")
            assert "won" in pair[0].ask("put")
            continue
        assert (1, 1) == (len(won), len(lost)), outcomes
        assert (lost[0]["expected"], lost[0]["head"], lost[0]["thread"]) == (
            lost[0]["parent"], won[0]["won"], thread)
        wins.append(won[0]["won"])
    links = await chain(target, thread, roots)
    assert wins == [checkpoint for checkpoint, _ in links][roots:]
    assert_linear(links)


@TARGETS
@SAVERS
async def test_two_processes_putting_freely_never_fork_the_chain(
    target: BackendTarget, children: Any, roots: int
) -> None:
    """Each reads the head and puts a child of it as fast as it can (after the roots):
    every accepted put's parent is the previous head, every refused one named a parent
    that already had a child, and the store holds exactly the accepted puts."""
    thread, (first, second) = children
    for _ in range(roots):
        first.ask("read")
        assert "won" in first.ask("put")
    runs = 25 if roots else 30
    for child in (first, second):
        child.send(f"run {runs}")
    reports = [line for child in (first, second) for line in child.until_done()]
    won = {line["won"]: line["parent"] for line in reports if "won" in line}
    links = await chain(target, thread, roots)
    assert won == dict(links[roots:])
    assert_linear(links)
    parents = {parent for _, parent in links}
    assert all(line["parent"] in parents and line["head"] != line["parent"]
               for line in reports if "lost" in line)
    assert len(won) + sum("lost" in line for line in reports) == 2 * runs


@TARGETS
@pytest.mark.parametrize("children", ["langgraph"], indirect=True)
async def test_a_late_put_or_write_after_another_process_deletes_is_refused(
    target: BackendTarget, children: Any
) -> None:
    """A process that read the head before another deleted the thread can neither put a
    child of it nor write to it: the thread stays deleted (langgraph#7206)."""
    thread, (late, deleter) = children
    assert "won" in late.ask("put")
    late.ask("read")
    assert {"deleted": True} == deleter.ask("delete")
    put, write = late.ask("put"), late.ask("write")
    assert (None, None) == (put["head"], write["head"])
    assert ("lost", "lost") == (next(iter(put)), next(iter(write)))
    assert [] == await chain(target, thread)
    assert "won" in deleter.ask("put")  # a new start, without a parent, is a new thread


@TARGETS
@pytest.mark.parametrize("children", ["maf"], indirect=True)
async def test_a_late_maf_save_after_another_process_deletes_is_refused(
    target: BackendTarget, children: Any
) -> None:
    """A process that read the latest checkpoint before another deleted the workflow's
    checkpoints cannot save a child of it: nothing comes back."""
    workflow, (late, deleter) = children
    late.ask("read")
    assert "won" in late.ask("put")
    late.ask("read")
    assert "won" in late.ask("put")
    late.ask("read")
    assert {"deleted": 2} == deleter.ask("delete")
    saved = late.ask("put")
    assert ("lost", None) == (next(iter(saved)), saved["head"])
    assert [] == await chain(target, workflow, roots=1)
    deleter.ask("read")
    assert "won" in deleter.ask("put")  # a new run, without a parent, starts again
