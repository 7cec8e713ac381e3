"""Hypothesis: thread checkpoints against a pure model, on memory and SQLite.

A state machine puts checkpoints (ids from a small set, so ids repeat), pending writes
(indexes from a small set, negatives included), deletes threads and runs, prunes and
copies threads, in two threads and two namespaces. After every step each namespace's
newest-first page, each checkpoint's state, channels and writes, and the tenant's blob
reference counts equal the model's; at the end the chain verifies and the views equal a
rebuild from the log.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from eventlog import EventLog, content_digest, open_log
from eventlog.checkpoints import ChannelValue, Payload
from eventlog.checkpoints.holdings import fold_thread
from eventlog.hashing import uncounted
from projections import compare_views

# Model-based runs: 200 examples each under CI=true, minutes in all (pytest -m properties).
pytestmark = pytest.mark.properties

R = TypeVar("R")
T = "tenant"
THREADS = ("a", "b")
NAMESPACES = ("", "sub:1")
IDS = ("c1", "c2", "c3")
RUNS = ("r1", "r2")

threads = st.sampled_from(THREADS)
namespaces = st.sampled_from(NAMESPACES)
ids = st.sampled_from(IDS)
values = st.sampled_from([b"x", b"y", b"same"])
channel_maps = st.dictionaries(  # name -> (version, value or None: stored by an earlier put)
    st.sampled_from(["m", "n"]),
    st.tuples(st.sampled_from(["v1", "v2"]), st.none() | values),
    max_size=2,
)
write_lists = st.lists(
    st.tuples(st.sampled_from([-1, 0, 1]), st.sampled_from(["m", "__error__"]), values),
    min_size=1, max_size=3,
)

Key = tuple[str, str, str]
ValueKey = tuple[str, str, str, str]  # thread, namespace, channel, version


class ThreadMachine(RuleBasedStateMachine):
    """The real store and a model, driven by the same rules."""

    url = "memory://"

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.directory = tempfile.mkdtemp()
        url = self.url.replace("{dir}", self.directory)
        self.manager = open_log(url)
        self.log: EventLog = self.run(self.manager.__aenter__())
        self.checkpoints: dict[Key, dict[str, Any]] = {}
        self.records: list[tuple[Key, list[bytes]]] = []
        self.writes: dict[tuple[str, str, str, str, int], tuple[str, bytes]] = {}
        self.write_refs: list[tuple[Key, bytes]] = []
        self.values: dict[ValueKey, bytes] = {}
        self.value_refs: list[tuple[ValueKey, bytes]] = []
        self.told: set[bytes] = set()
        """Digests of payloads of at most TOLD_BY_DIGEST bytes: stored, never counted."""

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        return self.runner.run(coroutine)

    def _digest(self, payload: bytes) -> bytes:
        digest = content_digest(payload)
        if uncounted(payload):
            self.told.add(digest)
        return digest

    def teardown(self) -> None:
        try:
            assert self.run(self.log.verify()).ok
            assert [] == self.run(compare_views(self.log))
        finally:
            self.run(self.manager.__aexit__(None, None, None))
            self.runner.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    # -- rules ---------------------------------------------------------------------------

    @rule(thread=threads, namespace=namespaces, checkpoint=ids, state=values,
          channels=channel_maps, run=st.sampled_from(RUNS))
    def put(self, thread: str, namespace: str, checkpoint: str, state: bytes,
            channels: dict[str, tuple[str, bytes | None]], run: str) -> None:
        self.run(self.log.checkpoints.threads.put(
            T, thread, checkpoint, namespace=namespace, state=Payload("b", state),
            channels={
                name: ChannelValue(version, None if value is None else Payload("b", value))
                for name, (version, value) in channels.items()
            },
            run_key=run,
        ))
        key = (thread, namespace, checkpoint)
        versions = {name: version for name, (version, _) in channels.items()}
        self.checkpoints[key] = {"state": state, "versions": versions, "run": run}
        self.records.append((key, [self._digest(state)]))
        for name, (version, value) in channels.items():
            if value is not None:
                self._store_value((thread, namespace, name, version), value)

    def _store_value(self, key: ValueKey, value: bytes) -> None:
        self.values.setdefault(key, value)
        self.value_refs.append((key, self._digest(value)))

    @rule(thread=threads, namespace=namespaces, checkpoint=ids,
          task=st.sampled_from(["t1", "t2"]), writes=write_lists)
    def put_writes(self, thread: str, namespace: str, checkpoint: str, task: str,
                   writes: list[tuple[int, str, bytes]]) -> None:
        self.run(self.log.checkpoints.threads.put_writes(
            T, thread, checkpoint, task,
            [(idx, channel, Payload("b", value)) for idx, channel, value in writes],
            namespace=namespace,
        ))
        chosen: dict[int, tuple[str, bytes]] = {}
        for idx, channel, value in writes:
            if idx < 0 or idx not in chosen:
                chosen[idx] = (channel, value)
        for idx, (channel, value) in chosen.items():
            slot = (thread, namespace, checkpoint, task, idx)
            if idx < 0 or slot not in self.writes:
                self.writes[slot] = (channel, value)
            self.write_refs.append(((thread, namespace, checkpoint), self._digest(value)))

    @rule(thread=threads)
    def delete_thread(self, thread: str) -> None:
        self.run(self.log.checkpoints.threads.delete_thread(T, thread))
        self._remove_where(lambda key: key[0] == thread, writes_too=True)

    @rule(runs=st.sets(st.sampled_from(RUNS), min_size=1))
    def delete_runs(self, runs: set[str]) -> None:
        self.run(self.log.checkpoints.threads.delete_runs(T, sorted(runs)))
        gone = {key for key, row in self.checkpoints.items() if row["run"] in runs}
        self._remove_where(lambda key: key in gone)

    @rule(thread=threads, keep=st.integers(1, 2))
    def prune(self, thread: str, keep: int) -> None:
        self.run(self.log.checkpoints.threads.prune(T, thread, keep_latest=keep))
        gone = set()
        for namespace in NAMESPACES:
            kept = sorted((k for k in self.checkpoints if k[:2] == (thread, namespace)),
                          reverse=True)
            gone.update(kept[keep:])
        self._remove_where(lambda key: key in gone)

    @rule(source=threads, destination=threads)
    def copy(self, source: str, destination: str) -> None:
        target = destination
        if source == target:
            return
        self.run(self.log.checkpoints.threads.copy_thread(T, source, target))
        copied = [(k, row) for k, row in self.checkpoints.items() if k[0] == source]
        if not copied:
            return
        for (_, namespace, checkpoint), row in copied:
            key = (target, namespace, checkpoint)
            self.checkpoints[key] = dict(row)
            self.records.append((key, [self._digest(row["state"])]))
        namespaces = {key[1] for key, _ in copied}
        for (thread, namespace, channel, version), value in list(self.values.items()):
            if thread == source and namespace in namespaces:
                self._store_value((target, namespace, channel, version), value)
        for (thread, namespace, checkpoint, task, idx), write in list(self.writes.items()):
            slot = (target, namespace, checkpoint, task, idx)
            if thread != source:
                continue
            self.write_refs.append(((target, namespace, checkpoint), self._digest(write[1])))
            if idx < 0 or slot not in self.writes:
                self.writes[slot] = write

    def _remove_where(self, gone: Any, *, writes_too: bool = False) -> None:
        keys = {key for key in self.checkpoints if gone(key)}
        acted_on = {key[0] for key in keys}
        for key in keys:
            del self.checkpoints[key]
        self.records = [(key, digests) for key, digests in self.records
                        if not gone(key) and key not in keys]
        self.writes = {
            slot: write for slot, write in self.writes.items()
            if slot[:3] not in keys and not (writes_too and gone(slot[:3]))
        }
        self.write_refs = [
            (key, digest) for key, digest in self.write_refs
            if key not in keys and not (writes_too and gone(key))
        ]
        carried = {(key[0], key[1], name, version) for key, row in self.checkpoints.items()
                   for name, version in row["versions"].items()}

        def released(value: ValueKey) -> bool:
            if writes_too and gone((value[0], "", "")):
                return True  # the whole thread went
            return value[0] in acted_on and value not in carried

        self.values = {k: v for k, v in self.values.items() if not released(k)}
        self.value_refs = [(k, d) for k, d in self.value_refs if not released(k)]

    # -- what must hold ------------------------------------------------------------------

    @invariant()
    def reads_agree(self) -> None:
        store = self.log.checkpoints.threads
        for thread in THREADS:
            for namespace in NAMESPACES:
                page = self.run(store.page(T, thread, namespace=namespace))
                expected = sorted((k[2] for k in self.checkpoints
                                   if k[:2] == (thread, namespace)), reverse=True)
                assert expected == [c.checkpoint_id for c in page]
                for found in page:
                    row = self.checkpoints[(thread, namespace, found.checkpoint_id)]
                    assert Payload("b", row["state"]) == found.state
                    assert {
                        name: Payload("b", self.values[value])
                        for name, version in row["versions"].items()
                        if (value := (thread, namespace, name, version)) in self.values
                    } == found.channels
                    assert {
                        (slot[3], slot[4]): (channel, value)
                        for slot, (channel, value) in self.writes.items()
                        if slot[:3] == (thread, namespace, found.checkpoint_id)
                    } == {(w.task_id, w.idx): (w.channel, w.value.data if w.value else None)
                          for w in found.writes or []}

    @invariant()
    def blob_references_agree(self) -> None:
        expected: Counter[bytes] = Counter()
        for _, digests in self.records:
            expected.update(digests)
        expected.update(digest for _, digest in self.write_refs)
        expected.update(digest for _, digest in self.value_refs)
        stored = dict(self.run(self.log.blob_refs(T)))
        assert self._counted(expected) == {d: n for d, n in stored.items() if n}
        # Each live payload the digest tells is stored, at 0 (a removed one may stay).
        assert all(stored.get(digest) == 0 for digest in expected if digest in self.told)

    def _counted(self, references: Counter[bytes]) -> dict[bytes, int]:
        return {d: n for d, n in references.items() if n and d not in self.told}


    @invariant()
    def holdings_agree(self) -> None:
        """What each thread's events hold, folded afresh and through the store's cached
        fold (extended step by step), is what the tenant's counts say: the references a
        removal may release are exactly those."""
        store = self.log.checkpoints.threads
        fresh: Counter[bytes] = Counter()
        for thread in THREADS:
            folded = self.run(fold_thread(self.log, T, thread))
            cached = self.run(store._held(T, thread))
            assert (folded.checkpoints, folded.values) == (cached.checkpoints, cached.values)
            fresh.update(folded.everything())
        assert self._counted(fresh) == {digest: count for digest, count in
                                        self.run(self.log.blob_refs(T)).items() if count}


class SqliteThreadMachine(ThreadMachine):
    url = "sqlite:///{dir}/log.db"


@pytest.mark.parametrize(("machine", "examples"), [
    (ThreadMachine, 60), (SqliteThreadMachine, 15),
], ids=["memory", "sqlite"])
def test_thread_store_agrees_with_the_model(machine: type[ThreadMachine], examples: int) -> None:
    """Every read and every blob count matches the model after every step."""
    run_state_machine_as_test(
        machine, settings=settings(max_examples=examples, stateful_step_count=12,
                                   deadline=None),
    )
