"""A child process driving a fenced saver on one thread, one command per line: LangGraph's
(`AsyncEventlogSaver`) or Agent Framework's (`EventlogCheckpointStorage`, whose thread is
a workflow).

    python -m tests.procs.fenced_saver langgraph|maf URL SCHEMA TENANT THREAD NAME

Commands on stdin, one JSON line out for each, flushed at once:

- ``read``: read the thread's head (``get_tuple``, ``get_latest``) and remember it;
- ``put``: put (save) a new checkpoint whose parent is the remembered head;
- ``write``: put a pending write on the remembered head (LangGraph only);
- ``delete``: ``delete_thread`` (LangGraph: ``{"deleted": true}``); delete every
  checkpoint of the workflow (MAF: ``{"deleted": how many}``);
- ``run N``: N times, read the head and put a child of it, reporting each put;
- ``quit``.

A put or write reports ``{"won": id, "parent": ...}`` or, refused, ``{"lost": id,
"parent": ..., "expected": ..., "head": ..., "thread": ...}`` (the facts `NotThreadHead`
carries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import structlog

from eventlog.errors import NotThreadHead


class Driver(Protocol):
    async def read(self) -> dict[str, Any]: ...

    async def put(self) -> dict[str, Any]: ...

    async def delete(self) -> dict[str, Any]: ...


class LangGraphDriver:
    def __init__(self, saver: Any, thread: str, name: str) -> None:
        self.saver = saver
        self.thread = thread
        self.name = name
        self.head: Any = self._root()

    def _root(self) -> Any:
        return {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}}

    async def read(self) -> dict[str, Any]:
        found = await self.saver.aget_tuple(self._root())
        self.head = self._root() if found is None else found.config
        return {"head": self._parent()}

    async def put(self) -> dict[str, Any]:
        from langgraph.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint()
        version = self.saver.get_next_version(None, None)
        checkpoint["channel_values"] = {"who": self.name}
        checkpoint["channel_versions"] = {"who": version}
        parent = self._parent()
        try:
            await self.saver.aput(self.head, checkpoint, {"source": "loop", "step": 1,
                                                          "writer": self.name},
                                  {"who": version})
        except NotThreadHead as refused:
            return {"lost": checkpoint["id"], "parent": parent, **_facts(refused)}
        return {"won": checkpoint["id"], "parent": parent}

    async def write(self) -> dict[str, Any]:
        parent = self._parent()
        try:
            await self.saver.aput_writes(self.head, [("who", self.name)], f"task-{self.name}")
        except NotThreadHead as refused:
            return {"lost": parent, "parent": parent, **_facts(refused)}
        return {"won": parent, "parent": parent}

    async def delete(self) -> dict[str, Any]:
        await self.saver.adelete_thread(self.thread)
        return {"deleted": True}

    def _parent(self) -> str | None:
        value = self.head["configurable"].get("checkpoint_id")
        return None if value is None else str(value)


class MafDriver:
    def __init__(self, storage: Any, workflow: str, name: str) -> None:
        self.storage = storage
        self.workflow = workflow
        self.name = name
        self.head: str | None = None

    async def read(self) -> dict[str, Any]:
        latest = await self.storage.get_latest(workflow_name=self.workflow)
        self.head = None if latest is None else latest.checkpoint_id
        return {"head": self.head}

    async def put(self) -> dict[str, Any]:
        from agent_framework import WorkflowCheckpoint

        checkpoint = WorkflowCheckpoint(
            workflow_name=self.workflow, graph_signature_hash="g",
            previous_checkpoint_id=self.head, state={"who": self.name})
        try:
            await self.storage.save(checkpoint)
        except NotThreadHead as refused:
            return {"lost": checkpoint.checkpoint_id, "parent": self.head, **_facts(refused)}
        return {"won": checkpoint.checkpoint_id, "parent": self.head}

    async def delete(self) -> dict[str, Any]:
        ids = await self.storage.list_checkpoint_ids(workflow_name=self.workflow)
        return {"deleted": [await self.storage.delete(i) for i in ids].count(True)}


def _facts(refused: NotThreadHead) -> dict[str, Any]:
    return {"expected": refused.expected, "head": refused.head,
            "namespace": refused.namespace, "thread": refused.thread_id}


@asynccontextmanager
async def opened(framework: str, url: str, schema: str, tenant: str, thread: str,
                 name: str) -> AsyncIterator[Driver]:
    """The framework's fenced saver on the log at ``url``, driven on ``thread``."""
    options: dict[str, Any] = {"schema": schema} if url.startswith("postgresql") else {}
    if framework == "langgraph":
        from eventlog.adapters.langgraph import AsyncEventlogSaver

        async with AsyncEventlogSaver.from_conn_string(url, tenant_id=tenant, fenced=True,
                                                       **options) as saver:
            yield LangGraphDriver(saver, thread, name)
    else:
        from eventlog.adapters.maf import EventlogCheckpointStorage

        async with EventlogCheckpointStorage.from_url(url, tenant_id=tenant, fenced=True,
                                                      **options) as storage:
            yield MafDriver(storage, thread, name)


async def main(framework: str, *args: str) -> None:
    async with opened(framework, *args) as driver:
        print(json.dumps({"ready": True}), flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            if not line or line[0] == "quit":
                return
            if line[0] == "run":
                for _ in range(int(line[1])):
                    await driver.read()
                    print(json.dumps(await driver.put()), flush=True)
                print(json.dumps({"done": True}), flush=True)
            else:
                print(json.dumps(await getattr(driver, line[0])()), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(*sys.argv[1:7]))
