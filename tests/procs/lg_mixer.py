"""A child process running a real LangGraph graph on one thread that other processes use
at the same time, mixing invokes with prune, delete_thread, copy_thread and
delete_for_runs (issue 21, item 5).

    python -m tests.procs.lg_mixer URL SCHEMA TENANT THREAD WRITER SECONDS

Prints ``{"ready": true}`` once its log is open, waits for a line on stdin (the go), works
for SECONDS, then prints one JSON line: ``ops`` (completed operations by kind),
``errors`` (exceptions by type), ``samples`` (a few of their messages), ``slowest`` (the
longest delete, in seconds) and ``library`` (the library's retry events by name, counted
from its standard-library log records).
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import random
import sys
import time
import uuid
from collections import Counter
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver

COUNTED = {"append_retried", "removal_retried", "copy_retried"}
"""The library's debug events that say a conflict or a deadlock was retried."""


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def plan(state: State) -> dict[str, Any]:
    return {"items": ["planned"]}


def work(state: State) -> dict[str, Any]:
    return {"items": [f"worked:{len(state['items'])}"]}


def finish(state: State) -> dict[str, Any]:
    return {"items": ["done"]}


class Tally(logging.Handler):
    """Counts the library's retry events (they are DEBUG records of ``eventlog``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        structured = getattr(record, "structured", None)
        if isinstance(structured, dict) and structured.get("event") in COUNTED:
            name = str(structured["event"])
            reason = structured.get("reason")
            self.counts[f"{name}:{reason}" if reason else name] += 1


async def main(url: str, schema: str, tenant: str, thread: str, writer: str,
               seconds: float) -> None:
    tally = Tally()
    library = logging.getLogger("eventlog")
    library.setLevel(logging.DEBUG)
    library.addHandler(tally)
    library.propagate = False
    options = {"schema": schema} if url.startswith("postgresql") else {}
    rng = random.Random(writer)
    async with open_log(url, **options) as log:
        saver = AsyncEventlogSaver(log, tenant_id=tenant)
        builder = StateGraph(State)
        builder.add_node("plan", plan)
        builder.add_node("work", work)
        builder.add_node("finish", finish)
        builder.add_edge(START, "plan")
        builder.add_edge("plan", "work")
        builder.add_edge("work", "finish")
        builder.add_edge("finish", END)
        graph = builder.compile(checkpointer=saver)
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        ops, errors, samples = Counter[str](), Counter[str](), []
        runs: list[str] = []
        slowest = 0.0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            kind = rng.choices(
                ["invoke", "prune", "delete_thread", "copy_thread", "delete_for_runs"],
                weights=[6, 1, 1, 1, 1])[0]
            started = time.monotonic()
            try:
                if kind == "invoke":
                    run = str(uuid.uuid4())
                    runs.append(run)
                    config: RunnableConfig = {"configurable": {"thread_id": thread},
                                              "run_id": uuid.UUID(run)}
                    await graph.ainvoke({"items": [writer]}, config)
                elif kind == "prune":
                    await saver.aprune([thread])
                elif kind == "delete_thread":
                    await saver.adelete_thread(thread)
                elif kind == "copy_thread":
                    await saver.acopy_thread(thread, f"{thread}-copy-{writer}-{ops[kind]}")
                else:
                    chosen = rng.sample(runs, min(2, len(runs)))
                    await saver.adelete_for_runs(chosen)
            except Exception as error:
                errors[type(error).__name__] += 1
                if len(samples) < 5:
                    samples.append(f"{kind}: {type(error).__name__}: {error}"[:300])
                continue
            if kind != "invoke":
                slowest = max(slowest, time.monotonic() - started)
            ops[kind] += 1
        print(json.dumps({"ops": ops, "errors": errors, "samples": samples,
                          "slowest": round(slowest, 3), "library": tally.counts}), flush=True)


if __name__ == "__main__":
    url, schema, tenant, thread, writer, seconds = sys.argv[1:]
    asyncio.run(main(url, schema, tenant, thread, writer, float(seconds)))
