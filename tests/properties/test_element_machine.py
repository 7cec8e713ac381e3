"""Hypothesis: values stored element by element (`eventlog.checkpoints.elements`) read back
as they were put, on memory and SQLite, whatever the puts, writes, prunes, copies and
deletes between them.

The machine puts checkpoints whose channel ``m`` is a list (growing from a common prefix,
shrinking, replaced) or a plain payload, and ``n`` a plain payload; versions advance and
repeat; writes are lists or payloads. A pure model keeps, per (thread, namespace,
channel, version), the first value put (as the views keep it) and releases what a removal
releases. After every step each checkpoint's channels and writes read back equal the
model, read by a store of its own (as another process reads: no manifest cached, so a
chain released under a kept value shows); at the end verify (which hashes every
element and checks every count) holds and the views equal a rebuild from the log. The
``extend`` rule puts the next checkpoint as a chat step does (the latest list plus a
message), so prunes keeping only the latest meet values resting on released ones.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from eventlog import EventLog, open_log
from eventlog.checkpoints import ChannelValue, Payload
from eventlog.checkpoints.thread_records import Elements
from eventlog.checkpoints.threads import ThreadCheckpoints
from projections import compare_views

pytestmark = pytest.mark.properties

R = TypeVar("R")
T = "tenant"
THREADS = ("a", "b")
NAMESPACES = ("", "sub")
IDS = ("c1", "c2", "c3", "c4", "c5", "c6")
BASE = [b"m1", b"m2", b"m3", b"m4", b"m5", b"m6"]

Value = bytes | tuple[bytes, ...]
lists = st.builds(lambda keep, tail: tuple(BASE[:keep]) + tuple(tail),
                  st.integers(0, len(BASE)),
                  st.lists(st.sampled_from([b"t1", b"t2", b"m1"]), max_size=2))
values: st.SearchStrategy[Value] = st.one_of(lists, lists, st.sampled_from([b"x", b"y"]))
def version_of(value: Value) -> str:
    """One version per value, as LangGraph's versions name one value each (a value kept
    only as another's base keeps its version's first value)."""
    return "v" + (b"|".join(value) if isinstance(value, tuple) else b"p" + value).hex()


# name -> (value, whether this put carries it or names a version an earlier put stored)
channel_maps = st.dictionaries(st.sampled_from(["m", "n"]),
                               st.tuples(values, st.booleans()), max_size=2)


def stored(value: Value) -> Payload | Elements:
    if isinstance(value, tuple):
        return Elements(tuple(Payload("b", item) for item in value))
    return Payload("b", value)


class ElementMachine(RuleBasedStateMachine):
    url = "memory://"

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.directory = tempfile.mkdtemp()
        self.manager = open_log(self.url.replace("{dir}", self.directory))
        self.log: EventLog = self.runner.run(self.manager.__aenter__())
        self.checkpoints: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.values: dict[tuple[str, str, str, str], Value] = {}
        self.writes: dict[tuple[str, str, str, int], Value] = {}

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        return self.runner.run(coroutine)

    def teardown(self) -> None:
        try:
            report = self.run(self.log.verify())
            assert report.ok, report.problems
            assert [] == self.run(compare_views(self.log))
        finally:
            self.run(self.manager.__aexit__(None, None, None))
            self.runner.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    @rule(thread=st.sampled_from(THREADS), namespace=st.sampled_from(NAMESPACES),
          checkpoint=st.sampled_from(IDS), channels=channel_maps,
          run=st.sampled_from(["r1", "r2"]))
    def put(self, thread: str, namespace: str, checkpoint: str,
            channels: dict[str, tuple[Value, bool]], run: str) -> None:
        self.run(self.log.checkpoints.threads.put(
            T, thread, checkpoint, namespace=namespace, state=Payload("b", b"s"),
            channels={name: ChannelValue(version_of(value),
                                         stored(value) if carried else None)
                      for name, (value, carried) in channels.items()},
            run_key=run))
        self.checkpoints[(thread, namespace, checkpoint)] = {
            "versions": {name: version_of(value) for name, (value, _) in channels.items()},
            "run": run}
        for name, (value, carried) in channels.items():
            if carried:
                self.values.setdefault((thread, namespace, name, version_of(value)), value)

    @rule(thread=st.sampled_from(THREADS), namespace=st.sampled_from(NAMESPACES),
          tail=st.lists(st.sampled_from([b"t1", b"t2", b"t3"]), min_size=1, max_size=2),
          run=st.sampled_from(["r1", "r2"]), then_prune=st.booleans())
    def extend(self, thread: str, namespace: str, tail: list[bytes], run: str,
               then_prune: bool) -> None:
        """The next checkpoint (the next id) appends to the latest one's list, as a chat
        step does: the put is a delta resting on that value, which a prune keeping only
        this checkpoint (``then_prune``, as retention after each turn) must keep."""
        ids = sorted(k[2] for k in self.checkpoints if k[:2] == (thread, namespace))
        later = [checkpoint for checkpoint in IDS if not ids or checkpoint > ids[-1]]
        if not later:
            return
        latest = self.checkpoints.get((thread, namespace, ids[-1])) if ids else None
        version = None if latest is None else latest["versions"].get("m")
        value = self.values.get((thread, namespace, "m", version or ""), BASE[:1])
        grown = (value if isinstance(value, tuple) else ()) + tuple(tail)
        self.put(thread, namespace, later[0], {"m": (grown, True)}, run)
        if then_prune:
            self.prune(thread, 1)

    @rule(thread=st.sampled_from(THREADS), namespace=st.sampled_from(NAMESPACES),
          checkpoint=st.sampled_from(IDS), idx=st.sampled_from([-1, 0, 1]), value=values)
    def put_writes(self, thread: str, namespace: str, checkpoint: str, idx: int,
                   value: Value) -> None:
        self.run(self.log.checkpoints.threads.put_writes(
            T, thread, checkpoint, "task", [(idx, "m", stored(value))], namespace=namespace))
        slot = (thread, namespace, checkpoint, idx)
        if idx < 0 or slot not in self.writes:
            self.writes[slot] = value

    @rule(thread=st.sampled_from(THREADS))
    def delete_thread(self, thread: str) -> None:
        self.run(self.log.checkpoints.threads.delete_thread(T, thread))
        self.checkpoints = {k: v for k, v in self.checkpoints.items() if k[0] != thread}
        self.values = {k: v for k, v in self.values.items() if k[0] != thread}
        self.writes = {k: v for k, v in self.writes.items() if k[0] != thread}

    @rule(thread=st.sampled_from(THREADS), keep=st.integers(1, 2))
    def prune(self, thread: str, keep: int) -> None:
        self.run(self.log.checkpoints.threads.prune(T, thread, keep_latest=keep))
        gone = set()
        for namespace in NAMESPACES:
            ids = sorted((k for k in self.checkpoints if k[:2] == (thread, namespace)),
                         reverse=True)
            gone.update(ids[keep:])
        self._remove(thread, gone)

    @rule(run=st.sampled_from(["r1", "r2"]))
    def delete_runs(self, run: str) -> None:
        self.run(self.log.checkpoints.threads.delete_runs(T, [run]))
        for thread in THREADS:
            self._remove(thread, {k for k, row in self.checkpoints.items()
                                  if k[0] == thread and row["run"] == run})

    @rule(source=st.sampled_from(THREADS), destination=st.sampled_from(THREADS))
    def copy(self, source: str, destination: str) -> None:
        target = destination
        if source == target:
            return
        self.run(self.log.checkpoints.threads.copy_thread(T, source, target))
        copied = {k: v for k, v in self.checkpoints.items() if k[0] == source}
        if not copied:
            return  # a thread of writes only: nothing is copied
        for (_, namespace, checkpoint), row in copied.items():
            self.checkpoints[(target, namespace, checkpoint)] = dict(row)
        namespaces = {k[1] for k in copied}
        for (thread, namespace, channel, version), value in list(self.values.items()):
            if thread == source and namespace in namespaces:
                self.values.setdefault((target, namespace, channel, version), value)
        for (thread, namespace, checkpoint, idx), value in list(self.writes.items()):
            slot = (target, namespace, checkpoint, idx)
            if thread == source and (idx < 0 or slot not in self.writes):
                self.writes[slot] = value

    def _remove(self, thread: str, gone: set[tuple[str, str, str]]) -> None:
        if not gone:
            return
        for key in gone:
            del self.checkpoints[key]
        self.writes = {k: v for k, v in self.writes.items() if k[:3] not in gone}
        carried = {(k[0], k[1], name, version) for k, row in self.checkpoints.items()
                   for name, version in row["versions"].items()}
        # A value no checkpoint carries may stay (a kept value's manifest rests on it);
        # reads only ever see carried values, so the model forgets it either way.
        self.values = {k: v for k, v in self.values.items()
                       if k[0] != thread or k in carried}

    @invariant()
    def reads_agree(self) -> None:
        # Read as another process would: a store of its own, so no manifest this one put
        # or read is remembered (the writer's cache would hide a chain released under it).
        store = ThreadCheckpoints(self.log)
        for thread in THREADS:
            for namespace in NAMESPACES:
                for found in self.run(store.page(T, thread, namespace=namespace)):
                    key = (thread, namespace, found.checkpoint_id)
                    row = self.checkpoints[key]
                    assert {
                        name: stored(self.values[value])
                        for name, version in row["versions"].items()
                        if (value := (thread, namespace, name, version)) in self.values
                    } == found.channels
                    assert {slot[3]: stored(value) for slot, value in self.writes.items()
                            if slot[:3] == key} == {w.idx: w.value for w in found.writes or []}


class SqliteElementMachine(ElementMachine):
    url = "sqlite:///{dir}/log.db"


@pytest.mark.parametrize(("machine", "examples"), [
    (ElementMachine, 60), (SqliteElementMachine, 15),
], ids=["memory", "sqlite"])
def test_element_values_read_back_as_put(machine: type[ElementMachine], examples: int) -> None:
    """Every checkpoint's channels and writes read back as put; verify holds at the end."""
    run_state_machine_as_test(
        machine, settings=settings(max_examples=examples, stateful_step_count=15,
                                   deadline=None),
    )
