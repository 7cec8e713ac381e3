"""Agent Framework's saver in single-writer mode (``fenced=True``, issue 33 §5): a save
whose parent is not the workflow's latest checkpoint (log order) is refused with
`NotThreadHead` and nothing is written; a save whose parent was deleted too; the
framework's own runs (pause, restart, resume) pass. On every backend; two real processes
in tests/test_fenced_processes.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from agent_framework import WorkflowCheckpoint, WorkflowRunState

from eventlog import EventLog, NotThreadHead
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.errors import InvalidInput
from tests.adapters.test_maf import build
from tests.conftest import BackendTarget

pytestmark = pytest.mark.parametrize("target", ["memory", "file", "sqlite", "postgresql"],
                                     indirect=True)
TENANT = "acme"


def checkpoint(parent: str | None = None, **fields: Any) -> WorkflowCheckpoint:
    return WorkflowCheckpoint(workflow_name="payments", graph_signature_hash="g",
                              previous_checkpoint_id=parent, **fields)


async def events(log: EventLog) -> int:
    return len((await log.read_all(tenant_id=TENANT, limit=1000)).events)


@pytest.fixture
def storage(log: Any) -> EventlogCheckpointStorage:
    return EventlogCheckpointStorage(log, tenant_id=TENANT, fenced=True)


async def test_a_fenced_workflow_pauses_and_resumes_as_unfenced(
    storage: EventlogCheckpointStorage, target: BackendTarget
) -> None:
    """A real workflow run, paused on a request and resumed from its latest checkpoint,
    saves only children of the latest: nothing is refused."""
    paused = await build(storage).run("order")
    request = paused.get_request_info_events()[0]
    latest = await storage.get_latest(workflow_name="payments")
    assert latest is not None
    done = await build(storage).run(checkpoint_id=latest.checkpoint_id,
                                    responses={request.request_id: "yes"})
    assert (WorkflowRunState.IDLE, ["50: yes"]) == (done.get_final_state(), done.get_outputs())
    saved = await storage.list_checkpoints(workflow_name="payments")
    assert [None, *[c.checkpoint_id for c in saved[:-1]]] == [
        c.previous_checkpoint_id for c in saved]
    assert (await storage.log.verify(TENANT)).ok


async def test_a_save_from_an_older_checkpoint_is_refused_and_writes_nothing(
    storage: EventlogCheckpointStorage
) -> None:
    """Two writers resumed from the same checkpoint: the first child is saved, the second
    is refused naming its parent and the latest that beat it; the log is unchanged."""
    root = checkpoint()
    await storage.save(root)
    first, second = checkpoint(root.checkpoint_id), checkpoint(root.checkpoint_id)
    await storage.save(first)
    before = await events(storage.log)
    with pytest.raises(NotThreadHead, match="not the last checkpoint saved") as refused:
        await storage.save(second)
    assert (refused.value.thread_id, refused.value.expected, refused.value.head,
            refused.value.checkpoint_id) == ("payments", root.checkpoint_id,
                                             first.checkpoint_id, second.checkpoint_id)
    assert before == await events(storage.log)
    assert [root.checkpoint_id, first.checkpoint_id] == await storage.list_checkpoint_ids(
        workflow_name="payments")


async def test_a_retried_save_and_a_new_run_are_accepted(
    storage: EventlogCheckpointStorage
) -> None:
    """The latest saved again (same parent) is a retry; a save without a parent is a new
    run's first checkpoint and becomes the latest; the old lineage's next save is then
    refused; the latest saved again under another parent is refused."""
    root = checkpoint()
    child = checkpoint(root.checkpoint_id)
    await storage.save(root)
    await storage.save(child)
    await storage.save(dataclasses.replace(child, state={"again": 1}))
    fresh = checkpoint()
    await storage.save(fresh)
    latest = await storage.get_latest(workflow_name="payments")
    assert latest is not None
    assert fresh.checkpoint_id == latest.checkpoint_id
    with pytest.raises(NotThreadHead):
        await storage.save(checkpoint(child.checkpoint_id))
    with pytest.raises(NotThreadHead, match="the head put again with another parent"):
        await storage.save(dataclasses.replace(fresh, previous_checkpoint_id=root.checkpoint_id))


async def test_a_save_whose_parent_was_deleted_is_refused(
    storage: EventlogCheckpointStorage
) -> None:
    """A late save after its parent was deleted does not bring it back: refused whether
    the workflow still holds other checkpoints or none."""
    root = checkpoint()
    await storage.save(root)
    child = checkpoint(root.checkpoint_id)
    await storage.save(child)
    assert await storage.delete(child.checkpoint_id)
    with pytest.raises(NotThreadHead, match="parent was deleted"):
        await storage.save(checkpoint(child.checkpoint_id))
    assert await storage.delete(root.checkpoint_id)
    with pytest.raises(NotThreadHead, match="holds no checkpoint"):
        await storage.save(checkpoint(root.checkpoint_id))
    assert [] == await storage.list_checkpoint_ids(workflow_name="payments")


async def test_unfenced_saves_still_fork_as_before(log: Any) -> None:
    """Without fenced=True nothing changes: two children of one parent are both kept."""
    storage = EventlogCheckpointStorage(log, tenant_id=TENANT)
    root = checkpoint()
    await storage.save(root)
    await storage.save(checkpoint(root.checkpoint_id))
    await storage.save(checkpoint(root.checkpoint_id))
    assert 3 == len(await storage.list_checkpoint_ids(workflow_name="payments"))


async def test_fenced_must_be_a_bool(log: Any) -> None:
    with pytest.raises(InvalidInput, match=r"^fenced: "):
        EventlogCheckpointStorage(log, tenant_id=TENANT, fenced="yes")  # type: ignore[arg-type]


async def test_a_second_run_resumed_from_the_same_checkpoint_cannot_fork_it(
    storage: EventlogCheckpointStorage
) -> None:
    """A real workflow paused, then resumed twice from that one checkpoint (two
    processes answering the same request): the first resume's saves continue the
    lineage; the second's are refused (MAF logs a failed save and runs on without
    checkpoints), so the stored lineage stays one chain."""
    paused = await build(storage).run("order")
    request = paused.get_request_info_events()[0]
    latest = await storage.get_latest(workflow_name="payments")
    assert latest is not None
    before = await storage.list_checkpoint_ids(workflow_name="payments")
    first = await build(storage).run(checkpoint_id=latest.checkpoint_id,
                                     responses={request.request_id: "yes"})
    stored = await storage.list_checkpoint_ids(workflow_name="payments")
    assert len(stored) > len(before)
    second = await build(storage).run(checkpoint_id=latest.checkpoint_id,
                                      responses={request.request_id: "no"})
    assert (["50: yes"], ["50: no"]) == (first.get_outputs(), second.get_outputs())
    assert stored == await storage.list_checkpoint_ids(workflow_name="payments")
    saved = await storage.list_checkpoints(workflow_name="payments")
    assert [None, *[c.checkpoint_id for c in saved[:-1]]] == [
        c.previous_checkpoint_id for c in saved]
