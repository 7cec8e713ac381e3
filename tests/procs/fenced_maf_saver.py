"""A child process driving a fenced Agent Framework saver on one workflow, one command
per line (the MAF twin of `tests.procs.fenced_saver`).

    python -m tests.procs.fenced_maf_saver URL SCHEMA TENANT WORKFLOW NAME

Commands on stdin, one JSON line out for each, flushed at once:

- ``read``: read the workflow's latest checkpoint (``get_latest``) and remember it;
- ``save``: save a new checkpoint whose parent is the remembered one;
- ``delete``: delete every checkpoint of the workflow;
- ``run N``: N times, read the latest and save a child of it, reporting each save;
- ``quit``.

A save reports ``{"won": id, "parent": ...}`` or, refused, ``{"lost": id, "parent": ...,
"expected": ..., "head": ...}`` (the facts `NotThreadHead` carries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import structlog
from agent_framework import WorkflowCheckpoint

from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.errors import NotThreadHead


class Driver:
    def __init__(self, storage: EventlogCheckpointStorage, workflow: str, name: str) -> None:
        self.storage = storage
        self.workflow = workflow
        self.name = name
        self.head: str | None = None

    async def read(self) -> dict[str, Any]:
        latest = await self.storage.get_latest(workflow_name=self.workflow)
        self.head = None if latest is None else latest.checkpoint_id
        return {"head": self.head}

    async def save(self) -> dict[str, Any]:
        checkpoint = WorkflowCheckpoint(
            workflow_name=self.workflow, graph_signature_hash="g",
            previous_checkpoint_id=self.head, state={"who": self.name})
        try:
            await self.storage.save(checkpoint)
        except NotThreadHead as refused:
            return {"lost": checkpoint.checkpoint_id, "parent": self.head,
                    "expected": refused.expected, "head": refused.head,
                    "thread": refused.thread_id}
        return {"won": checkpoint.checkpoint_id, "parent": self.head}

    async def delete(self) -> dict[str, Any]:
        ids = await self.storage.list_checkpoint_ids(workflow_name=self.workflow)
        return {"deleted": [await self.storage.delete(i) for i in ids].count(True)}

    async def run(self, count: int) -> None:
        for _ in range(count):
            await self.read()
            print(json.dumps(await self.save()), flush=True)


async def main(url: str, schema: str, tenant: str, workflow: str, name: str) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with EventlogCheckpointStorage.from_url(url, tenant_id=tenant, fenced=True,
                                                  **options) as storage:
        driver = Driver(storage, workflow, name)
        print(json.dumps({"ready": True}), flush=True)
        loop = asyncio.get_running_loop()
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            if not line or line[0] == "quit":
                return
            if line[0] == "run":
                await driver.run(int(line[1]))
                print(json.dumps({"done": True}), flush=True)
            else:
                print(json.dumps(await getattr(driver, line[0])()), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(*sys.argv[1:6]))
