"""Hypothesis: two fenced writers on one thread against a model of one chain, on memory
and SQLite.

Two stores over one log (two processes, each with its own head cache and remembered
bases) read the thread's head, put children of what they read (or roots), write to it,
delete and prune the thread, in any order. A put is accepted exactly when its parent is
the model's head (a root exactly when there is none), a write exactly when it names the
head; after every step the thread is one chain (each checkpoint's parent the one before
it) whose head is the model's; at the end the log verifies and the views equal a rebuild.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from eventlog import NotThreadHead, OpenLog, open_log
from eventlog.checkpoints import Payload, ThreadCheckpoints
from projections import compare_views

pytestmark = pytest.mark.properties

R = TypeVar("R")
T = "tenant"
THREAD = "th"
writers = st.sampled_from([0, 1])


class FencedMachine(RuleBasedStateMachine):
    """Two fenced stores on one thread, and the head a single chain would have."""

    url = "memory://"

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.directory = tempfile.mkdtemp()
        self.manager = open_log(self.url.replace("{dir}", self.directory))
        self.log: OpenLog = self.run(self.manager.__aenter__())
        self.stores: list[ThreadCheckpoints] = [self.log.threads, self.log.sibling().threads]
        self.read: list[str | None] = [None, None]  # the head each writer last read
        self.head: str | None = None
        self.ids = (f"c{number:04}" for number in itertools.count(1))

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        return self.runner.run(coroutine)

    def teardown(self) -> None:
        try:
            assert self.run(self.log.verify()).ok
            assert [] == self.run(compare_views(self.log))
        finally:
            self.run(self.manager.__aexit__(None, None, None))
            self.runner.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    def accepted(self, call: Coroutine[Any, Any, object]) -> bool:
        try:
            self.run(call)
        except NotThreadHead:
            return False
        return True

    @rule(writer=writers)
    def read_head(self, writer: int) -> None:
        found = self.run(self.stores[writer].get(T, THREAD))
        self.read[writer] = None if found is None else found.checkpoint_id

    @rule(writer=writers, root=st.booleans())
    def put(self, writer: int, root: bool) -> None:
        checkpoint, parent = next(self.ids), None if root else self.read[writer]
        expected = parent == self.head
        assert expected == self.accepted(self.stores[writer].put(
            T, THREAD, checkpoint, state=Payload("b", checkpoint.encode()), parent_id=parent,
            fenced=True))
        if expected:
            self.head = self.read[writer] = checkpoint

    @rule(writer=writers)
    def write(self, writer: int) -> None:
        target = self.read[writer]
        if target is None:
            return
        assert (target == self.head) == self.accepted(self.stores[writer].put_writes(
            T, THREAD, target, "task", [(0, "m", Payload("b", b"w"))], fenced=True))

    @rule(writer=writers)
    def delete(self, writer: int) -> None:
        self.run(self.stores[writer].delete_thread(T, THREAD))
        self.head = None

    @rule(writer=writers)
    def prune(self, writer: int) -> None:
        self.run(self.stores[writer].prune(T, THREAD, keep_latest=1))

    @invariant()
    def one_chain_ending_at_the_head(self) -> None:
        found = list(reversed(self.run(self.log.threads.page(T, THREAD, payloads=False))))
        assert self.head == (found[-1].checkpoint_id if found else None)
        assert [c.checkpoint_id for c in found[:-1]] == [c.parent_id for c in found[1:]]


class SqliteFencedMachine(FencedMachine):
    url = "sqlite:///{dir}/log.db"


@pytest.mark.parametrize(("machine", "examples"), [
    (FencedMachine, 100), (SqliteFencedMachine, 20),
], ids=["memory", "sqlite"])
def test_two_fenced_writers_keep_one_chain(machine: type[FencedMachine], examples: int) -> None:
    """Puts and writes are accepted exactly when based on the head; the chain never forks."""
    run_state_machine_as_test(
        machine, settings=settings(max_examples=examples, stateful_step_count=20,
                                   deadline=None),
    )
