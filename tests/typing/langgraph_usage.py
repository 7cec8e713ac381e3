"""Public-API usage of the LangGraph saver and thread checkpoints, checked by mypy --strict."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import assert_type

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from eventlog import OpenLog
from eventlog.adapters.langgraph import ACTOR_KEY, AsyncEventlogSaver, EventlogSaver
from eventlog.checkpoints import Payload, ThreadCheckpoint, ThreadCheckpoints


async def async_saver(log: OpenLog, config: RunnableConfig) -> None:
    saver = AsyncEventlogSaver(log, tenant_id="acme")
    checkpointer: BaseCheckpointSaver[str] = saver
    assert_type(await saver.aget_tuple(config), CheckpointTuple | None)
    assert_type(saver.alist(None, filter={"source": "input"}, limit=10),
                AsyncIterator[CheckpointTuple])
    await saver.adelete_for_runs(["run-1"])
    await saver.acopy_thread("a", "b")
    await saver.aprune(["a"], strategy="keep_latest")
    assert_type(saver.get_next_version(None, None), str)
    async with AsyncEventlogSaver.from_conn_string("memory://", tenant_id="acme") as opened:
        assert_type(opened, AsyncEventlogSaver)
    del checkpointer


def sync_saver(config: RunnableConfig) -> None:
    with EventlogSaver.from_conn_string("sqlite:///eventlog.db", tenant_id="acme") as saver:
        assert_type(saver, EventlogSaver)
        assert_type(saver.get_tuple(config), CheckpointTuple | None)
        assert_type(saver.list(config, before=config), Iterator[CheckpointTuple])
        saver.delete_thread("a")


async def threads(log: OpenLog) -> None:
    store = log.threads
    assert_type(store, ThreadCheckpoints)
    assert_type(log.checkpoints.threads, ThreadCheckpoints)
    position = await store.put("acme", "t", "c1", state=Payload("json", b"{}"), step=-1)
    assert_type(position, int)
    assert_type(await store.get("acme", "t"), ThreadCheckpoint | None)
    assert_type(await store.page("acme", metadata={"source": "loop"}), list[ThreadCheckpoint])
    assert_type(await store.namespaces("acme", "t"), list[str])
    assert_type(await store.delete_runs("acme", ["r"]), int)


def approved_by(log: OpenLog) -> RunnableConfig:
    """A saver acting as a service; one call's config naming its approver."""
    saver = AsyncEventlogSaver(log, tenant_id="acme", actor="svc")
    assert_type(saver.actor, str | None)
    assert_type(ACTOR_KEY, str)
    return {"configurable": {"thread_id": "t", ACTOR_KEY: "alice"}}
