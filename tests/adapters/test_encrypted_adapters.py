"""The framework adapters on an encrypted log (issue 32): LangGraph's conformance suite
and a real graph through `from_conn_string(..., keyring=)`, Agent Framework through
`from_url(..., keyring=)`; nothing written in the clear."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.crypto import init_keyring
from tests.adapters.langgraph_stores import build, thread
from tests.conftest import BackendTarget


def _stored(directory: Path) -> bytes:
    """The database file and its WAL, as bytes."""
    return b"".join(path.read_bytes() for path in directory.glob("log.db*"))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_the_conformance_suite_passes_on_an_encrypted_log(
        target: BackendTarget, tmp_path: Path) -> None:
    """Every capability LangGraph's suite detects passes with a keyring (lists stored as
    elements, as on a plain log)."""
    keyring = init_keyring(tmp_path / "keyring.json")

    @checkpointer_test(name=f"AsyncEventlogSaver[{target.name}, encrypted]")
    async def factory() -> AsyncIterator[AsyncEventlogSaver]:
        async with AsyncEventlogSaver.from_conn_string(
            target.url, tenant_id="conformance", keyring=keyring, **target.options()
        ) as saver:
            assert saver.elements  # lists stored as sealed elements
            yield saver

    report = await validate(factory)
    failures = {name: result.failures for name, result in report.results.items()
                if not result.passed}
    assert ({}, True) == (failures, all(r.tests_passed > 0 for r in report.results.values()
                                        if r.detected))


async def test_a_real_graph_runs_on_an_encrypted_sqlite_log(tmp_path: Path) -> None:
    """A graph with an interrupt runs and resumes; its values are absent from the file."""
    from langgraph.types import Command

    keyring = init_keyring(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with AsyncEventlogSaver.from_conn_string(url, keyring=keyring) as saver:
        graph = build(saver)
        config = thread("t-secret")
        await graph.ainvoke({"items": ["MARKER-REQUEST"]}, config)
        await graph.ainvoke(Command(resume="MARKER-ANSWER"), config)
        state = await graph.aget_state(config)
    stored = _stored(tmp_path)
    assert ([], True) == (
        [m for m in (b"MARKER-REQUEST", b"MARKER-ANSWER", b"ship it?") if m in stored],
        "approved:MARKER-ANSWER" in state.values["items"])


async def test_an_agent_framework_workflow_pauses_and_resumes_encrypted(tmp_path: Path) -> None:
    """A workflow pauses on request_info and resumes from an encrypted log reopened with
    `from_url(..., keyring=)`; its state is absent from the file, and verify holds."""
    from agent_framework import WorkflowRunState

    from eventlog.adapters.maf import EventlogCheckpointStorage
    from tests.adapters.test_maf import build, checkpoint

    keyring = init_keyring(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with EventlogCheckpointStorage.from_url(url, keyring=keyring) as storage:
        paused = await build(storage).run("order")
        request = paused.get_request_info_events()[0]
        saved = await storage.save(checkpoint(name="other", state={"who": "MARKER-ORDER"}))
    async with EventlogCheckpointStorage.from_url(url, keyring=keyring) as storage:
        latest = await storage.get_latest(workflow_name="payments")
        assert latest is not None
        done = await build(storage).run(checkpoint_id=latest.checkpoint_id,
                                        responses={request.request_id: "yes"})
        assert (WorkflowRunState.IDLE, True, {"who": "MARKER-ORDER"}) == (
            done.get_final_state(), (await storage.log.verify()).ok,
            (await storage.load(saved)).state)
    stored = _stored(tmp_path)
    assert b"MARKER-ORDER" not in stored


async def test_threads_sharing_a_subject_are_erased_together(tmp_path: Path) -> None:
    """Two threads naming one subject (``configurable["subject"]``, and the saver's
    ``subject=`` default) are both refused after the subject is erased; a third thread,
    its own subject, still reads."""
    from eventlog.adapters.langgraph import SUBJECT_KEY
    from eventlog.errors import SubjectErased

    keyring = init_keyring(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    named = {"configurable": {"thread_id": "a", SUBJECT_KEY: "customer-7"}}
    async with AsyncEventlogSaver.from_conn_string(url, keyring=keyring) as saver:
        await build(saver).ainvoke({"items": ["MARKER-A"]}, named)
        await build(saver).ainvoke({"items": ["MARKER-C"]}, thread("c"))
        keys = await saver.log.storage.subject_keys("default", "a")
    async with AsyncEventlogSaver.from_conn_string(url, keyring=keyring,
                                                   subject="customer-7") as saver:
        await build(saver).ainvoke({"items": ["MARKER-B"]}, thread("b"))
        # Before the erasure both read whole: their lists are element-stored under the
        # shared subject's addresses, not their threads'.
        for name, marker in (("a", "MARKER-A"), ("b", "MARKER-B")):
            found = await saver.aget_tuple(thread(name))
            assert found is not None
            assert saver.elements
            assert marker == found.checkpoint["channel_values"]["items"][0]
        await saver.log.erase("default", "customer-7", reason="asked")
        for name in ("a", "b"):
            with pytest.raises(SubjectErased):
                await saver.aget_tuple(thread(name))
        kept = await saver.aget_tuple(thread("c"))
    assert kept is not None
    assert ([], ["MARKER-C", "planned"]) == (keys, kept.checkpoint["channel_values"]["items"][:2])


async def test_agent_framework_workflows_sharing_a_subject_are_erased_together(
        tmp_path: Path) -> None:
    """`EventlogCheckpointStorage(subject=)` seals two workflows under one subject:
    erased, both refuse to load; a storage without it keeps its workflow readable."""
    from eventlog.adapters.maf import EventlogCheckpointStorage
    from eventlog.errors import SubjectErased
    from tests.adapters.test_maf import checkpoint

    keyring = init_keyring(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with EventlogCheckpointStorage.from_url(url, keyring=keyring,
                                                  subject="customer-7") as storage:
        ids = [await storage.save(checkpoint(name=name, state={"who": "MARKER"}))
               for name in ("one", "two")]
    async with EventlogCheckpointStorage.from_url(url, keyring=keyring) as storage:
        own = await storage.save(checkpoint(name="three", state={"who": "kept"}))
        await storage.log.erase("default", "customer-7")
        for checkpoint_id in ids:
            with pytest.raises(SubjectErased):
                await storage.load(checkpoint_id)
        assert {"who": "kept"} == (await storage.load(own)).state


@pytest.mark.adopt
async def test_adoption_into_an_encrypted_log_seals_and_an_erased_thread_is_not_exported(
        tmp_path: Path) -> None:
    """A thread adopted from LangGraph's own SQLite saver into an encrypted log is sealed
    there (no marker in the file) and reads back as the source has it; once erased,
    exporting it back to LangGraph is refused (`SubjectErased`), nothing written."""
    from eventlog.adapters.langgraph_adoption import adopt_langgraph, export_langgraph
    from eventlog.errors import SubjectErased
    from tests.adapters.langgraph_stores import history, sqlite_saver

    keyring = init_keyring(tmp_path / "keyring.json")
    async with sqlite_saver(tmp_path / "langgraph.db") as source, \
            AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'log.db'}",
                                                keyring=keyring, tenant_id="t") as ours:
        await build(source).ainvoke({"items": ["MARKER-ADOPTED"]}, thread("a"))
        report = await adopt_langgraph(ours.log, source, tenant_id="t")
        same = await history(source, "a") == await history(ours, "a")
        stored = _stored(tmp_path)
        await ours.log.erase("t", "a", reason="asked")
        async with sqlite_saver(tmp_path / "back.db") as back:
            with pytest.raises(SubjectErased):
                await export_langgraph(ours.log, back, tenant_id="t")
            assert [] == [item async for item in back.alist(None)]
    assert (True, 0 < report.checkpoints, False) == (same, True, b"MARKER-ADOPTED" in stored)


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_a_hold_on_the_adapters_subject_keeps_every_thread_naming_it(
        tmp_path: Path, encrypted: bool) -> None:
    """Threads a saver writes under ``subject=`` record that subject on their puts, with
    or without a keyring: a legal hold on it keeps both threads whole through a
    retention pass that trims a thread of its own subject; released, the next pass
    trims them too."""
    keyring = init_keyring(tmp_path / "keyring.json") if encrypted else None
    url = f"sqlite:///{tmp_path / 'log.db'}"

    async def counts(saver: AsyncEventlogSaver) -> list[int]:
        return [len([t async for t in saver.alist(thread(name))]) for name in "abc"]

    async with AsyncEventlogSaver.from_conn_string(url, keyring=keyring,
                                                   subject="customer-7") as saver:
        for name in "ab":
            await build(saver).ainvoke({"items": [f"MARKER-{name}"]}, thread(name))
    async with AsyncEventlogSaver.from_conn_string(url, keyring=keyring) as saver:
        await build(saver).ainvoke({"items": ["MARKER-C"]}, thread("c"))
        before = await counts(saver)
        await saver.log.retention.hold("default", "customer-7", reason="litigation")
        await saver.log.retention.apply("default", keep_latest=1)
        held = await counts(saver)
        await saver.log.retention.release("default", "customer-7")
        await saver.log.retention.apply("default", keep_latest=1)
        released = await counts(saver)
    trimmed = held[2]  # what keep_latest=1 leaves of such a thread (per namespace)
    assert trimmed < before[2]
    assert ([*before[:2], trimmed], [trimmed] * 3) == (held, released)
