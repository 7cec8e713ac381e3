"""Public-API usage of the Agent Framework checkpoint storage, checked by mypy --strict."""

from __future__ import annotations

from typing import assert_type

from agent_framework import CheckpointStorage, WorkflowCheckpoint

from eventlog import OpenLog
from eventlog.adapters.maf import EventlogCheckpointStorage


async def storage(log: OpenLog, checkpoint: WorkflowCheckpoint) -> None:
    direct = EventlogCheckpointStorage(log, tenant_id="acme", actor="alice")
    assert_type(direct.actor, str | None)
    protocol: CheckpointStorage = direct  # satisfies MAF's protocol structurally
    assert_type(await direct.save(checkpoint), str)
    assert_type(await direct.load("id"), WorkflowCheckpoint)
    assert_type(await direct.list_checkpoints(workflow_name="w"), list[WorkflowCheckpoint])
    assert_type(await direct.list_checkpoint_ids(workflow_name="w"), list[str])
    assert_type(await direct.get_latest(workflow_name="w"), WorkflowCheckpoint | None)
    assert_type(await direct.delete("id"), bool)
    async with EventlogCheckpointStorage.from_url(
        "memory://", tenant_id="acme", allowed_checkpoint_types=["app.models:State"],
        actor="svc:payments",
    ) as opened:
        assert_type(opened, EventlogCheckpointStorage)
    del protocol
