"""A child process driving a fenced LangGraph saver on one thread, one command per line.

    python -m tests.procs.fenced_saver URL SCHEMA TENANT THREAD NAME

Commands on stdin, one JSON line out for each, flushed at once:

- ``read``: read the thread's head (``get_tuple``) and remember it;
- ``put``: put a new checkpoint whose parent is the remembered head;
- ``write``: put a pending write on the remembered head;
- ``delete``: ``delete_thread``;
- ``run N``: N times, read the head and put a child of it, reporting each put;
- ``quit``.

A put or write reports ``{"won": id, "parent": ...}`` or, refused, ``{"lost": id,
"parent": ..., "expected": ..., "head": ...}`` (the facts `NotThreadHead` carries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import structlog
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.errors import NotThreadHead


class Driver:
    def __init__(self, saver: AsyncEventlogSaver, thread: str, name: str) -> None:
        self.saver = saver
        self.thread = thread
        self.name = name
        self.head: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

    async def read(self) -> dict[str, Any]:
        found = await self.saver.aget_tuple(
            {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}})
        if found is None:
            self.head = {"configurable": {"thread_id": self.thread, "checkpoint_ns": ""}}
        else:
            self.head = found.config
        return {"head": self._parent()}

    async def put(self) -> dict[str, Any]:
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

    async def run(self, count: int) -> None:
        for _ in range(count):
            await self.read()
            print(json.dumps(await self.put()), flush=True)

    def _parent(self) -> str | None:
        value = self.head["configurable"].get("checkpoint_id")
        return None if value is None else str(value)


def _facts(refused: NotThreadHead) -> dict[str, Any]:
    return {"expected": refused.expected, "head": refused.head,
            "namespace": refused.namespace, "thread": refused.thread_id}


async def main(url: str, schema: str, tenant: str, thread: str, name: str) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id=tenant, fenced=True,
                                                   **options) as saver:
        driver = Driver(saver, thread, name)
        print(json.dumps({"ready": True}), flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            if not line or line[0] == "quit":
                return
            if line[0] == "run":
                await driver.run(int(line[1]))
                print(json.dumps({"done": True}), flush=True)
            elif line[0] == "delete":
                await saver.adelete_thread(thread)
                print(json.dumps({"deleted": True}), flush=True)
            else:
                print(json.dumps(await getattr(driver, line[0])()), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(*sys.argv[1:6]))
