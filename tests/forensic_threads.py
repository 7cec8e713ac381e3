"""Real framework threads for the forensic commands' tests (and the report's).

Each helper drives a real framework against a log through our adapters and returns a
small record of what the framework did, read from the framework's own answers (its
state history, the configs it returned), so tests compare the commands' output with
facts rather than with strings written here twice:

- `interrupted_thread`: a compiled 3-node LangGraph graph whose middle node asks a
  question with ``interrupt(...)``, answered with ``Command(resume=...)``;
- `forked_thread`: the same graph, finished, then forked from an earlier checkpoint
  through ``aupdate_state(..., as_node=...)`` and run on from the fork;
- `subgraph_thread`: a graph whose middle node is a compiled subgraph that interrupts,
  so checkpoints land under the subgraph's ``checkpoint_ns``;
- `crashed_thread`: a superstep of two parallel nodes where one writes and the other
  raises, so the writer's pending writes are saved and the step never finishes;
- `maf_workflow`: an Agent Framework workflow that requests a human's answer, checkpointed
  with `EventlogCheckpointStorage`, then resumed with the answer.

``await write_all(log, tenant)`` writes all five into one tenant (distinct thread ids).
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from agent_framework import (
    Executor,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    register_checkpoint_type,
    response_handler,
)
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from eventlog import EventLog
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.adapters.maf import EventlogCheckpointStorage
from tests.conftest import PG_URL, BackendTarget, drop_schema, fresh_id, require_postgres
from tests.procs.settle import settle

QUESTION = {"question": "ship the order to Lisbon?", "amount": 420}
"""What the approving node asks (its interrupt value)."""
ANSWER = "yes, ship it"
"""The human's answer (the ``Command(resume=...)`` value)."""
BY_HAND = ["corrected by hand"]
"""What `forked_thread`'s ``update_state`` writes into ``items``."""
CRASH = "the payment service timed out"
"""The message of the exception `crashed_thread`'s failing node raises."""


@dataclass
class GraphRun:
    """What a LangGraph helper did to one thread."""

    tenant: str
    thread_id: str
    nodes: list[str]
    """Every node that ran, in the order the graph ran them (a subgraph's nodes too)."""
    question: Any = None
    interrupt_node: str | None = None
    answer: Any = None
    checkpoint_ids: list[str] = field(default_factory=list)
    """The root namespace's checkpoints, oldest first (as the graph's history gives)."""
    namespaces: list[str] = field(default_factory=list)
    """The namespaces other than the root's in which checkpoints were written."""
    fork_from: str | None = None
    """The checkpoint the fork branched from (`forked_thread`)."""
    fork_id: str | None = None
    """The checkpoint ``update_state`` wrote (`forked_thread`)."""
    fork_writer: str | None = None
    """The node ``update_state`` wrote as (`forked_thread`)."""
    unfinished_checkpoint: str | None = None
    """The checkpoint whose step started and never finished (`crashed_thread`)."""
    wrote: str | None = None
    """The node that wrote before the step failed (`crashed_thread`)."""
    failed: str | None = None
    """The node that raised (`crashed_thread`)."""


@dataclass
class WorkflowRun:
    """What `maf_workflow` did."""

    tenant: str
    workflow: str
    executors: list[str]
    request_id: str
    question: Any
    answer: str
    output: str
    checkpoint_ids: list[str]
    """The workflow's checkpoints, oldest first."""
    shared_state: dict[str, Any] = field(default_factory=dict)
    """What the executors put in the workflow's shared state."""


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _plan(state: State) -> dict[str, Any]:
    return {"items": ["planned"]}


def _approve(state: State) -> dict[str, Any]:
    answer = interrupt(QUESTION)
    return {"items": [f"approved: {answer}"]}


def _ship(state: State) -> dict[str, Any]:
    return {"items": ["shipped"]}


def _three_nodes(saver: AsyncEventlogSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("plan", _plan)
    builder.add_node("approve", _approve)
    builder.add_node("ship", _ship)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approve")
    builder.add_edge("approve", "ship")
    builder.add_edge("ship", END)
    return builder.compile(checkpointer=saver)


def _with_subgraph(saver: AsyncEventlogSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    inner = StateGraph(State)
    inner.add_node("approve", _approve)
    inner.add_edge(START, "approve")
    inner.add_edge("approve", END)
    outer = StateGraph(State)
    outer.add_node("plan", _plan)
    outer.add_node("review", inner.compile())
    outer.add_node("ship", _ship)
    outer.add_edge(START, "plan")
    outer.add_edge("plan", "review")
    outer.add_edge("review", "ship")
    outer.add_edge("ship", END)
    return outer.compile(checkpointer=saver)


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


async def _history(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str) -> list[str]:
    snapshots = [s async for s in graph.aget_state_history(_config(thread_id))]
    return [str(s.config["configurable"]["checkpoint_id"]) for s in reversed(snapshots)]


async def _namespaces(log: EventLog, tenant: str, thread_id: str) -> list[str]:
    return [ns for ns in await log.checkpoints.threads.namespaces(tenant, thread_id) if ns]


async def interrupted_thread(log: EventLog, tenant: str, thread_id: str,
                             answered_by: str | None = None) -> GraphRun:
    """plan → approve (asks `QUESTION`, answered `ANSWER`, acting as ``answered_by`` when
    given) → ship."""
    graph = _three_nodes(AsyncEventlogSaver(log, tenant_id=tenant))
    await graph.ainvoke({"items": []}, _config(thread_id))
    if answered_by is None:
        await graph.ainvoke(Command(resume=ANSWER), _config(thread_id))
    else:
        with log.acting_as(answered_by):
            await graph.ainvoke(Command(resume=ANSWER), _config(thread_id))
    return GraphRun(
        tenant=tenant, thread_id=thread_id, nodes=["plan", "approve", "ship"],
        question=QUESTION, interrupt_node="approve", answer=ANSWER,
        checkpoint_ids=await _history(graph, thread_id),
    )


async def forked_thread(log: EventLog, tenant: str, thread_id: str) -> GraphRun:
    """The interrupted graph run to its end, then forked from the checkpoint after
    ``plan`` by ``update_state(..., as_node="plan")`` and run on from the fork."""
    run = await interrupted_thread(log, tenant, thread_id)
    graph = _three_nodes(AsyncEventlogSaver(log, tenant_id=tenant))
    snapshots = [s async for s in graph.aget_state_history(_config(thread_id))]
    after_plan = next(s for s in snapshots if s.next == ("approve",)
                      and s.metadata is not None and s.metadata.get("source") == "loop")
    fork = await graph.aupdate_state(after_plan.config, {"items": BY_HAND}, as_node="plan")
    await graph.ainvoke(None, fork)
    run.fork_from = str(after_plan.config["configurable"]["checkpoint_id"])
    run.fork_id = str(fork["configurable"]["checkpoint_id"])
    run.fork_writer = "plan"
    run.checkpoint_ids = await _history(graph, thread_id)
    return run


async def subgraph_thread(log: EventLog, tenant: str, thread_id: str) -> GraphRun:
    """plan → review (a subgraph whose ``approve`` asks `QUESTION`) → ship."""
    graph = _with_subgraph(AsyncEventlogSaver(log, tenant_id=tenant))
    await graph.ainvoke({"items": []}, _config(thread_id))
    await graph.ainvoke(Command(resume=ANSWER), _config(thread_id))
    return GraphRun(
        tenant=tenant, thread_id=thread_id, nodes=["plan", "review", "approve", "ship"],
        question=QUESTION, interrupt_node="approve", answer=ANSWER,
        checkpoint_ids=await _history(graph, thread_id),
        namespaces=await _namespaces(log, tenant, thread_id),
    )


class Crash(RuntimeError):
    """What the failing node raises."""


def _reserve(state: State) -> dict[str, Any]:
    return {"items": ["reserved"]}


def _charge(state: State) -> dict[str, Any]:
    raise Crash(CRASH)


async def crashed_thread(log: EventLog, tenant: str, thread_id: str) -> GraphRun:
    """``reserve`` and ``charge`` run in one superstep; ``charge`` raises, so the
    superstep never finishes and ``reserve``'s writes stay pending on its checkpoint."""
    builder = StateGraph(State)
    builder.add_node("reserve", _reserve)
    builder.add_node("charge", _charge)
    builder.add_edge(START, "reserve")
    builder.add_edge(START, "charge")
    builder.add_edge("reserve", END)
    builder.add_edge("charge", END)
    graph = builder.compile(checkpointer=AsyncEventlogSaver(log, tenant_id=tenant))
    try:
        await graph.ainvoke({"items": []}, _config(thread_id))
    except Crash:
        pass
    else:  # pragma: no cover - the graph must fail for the fixture to mean anything
        raise AssertionError("the crashing node did not raise")
    state = await graph.aget_state(_config(thread_id))
    return GraphRun(
        tenant=tenant, thread_id=thread_id, nodes=["reserve", "charge"],
        checkpoint_ids=await _history(graph, thread_id),
        unfinished_checkpoint=str(state.config["configurable"]["checkpoint_id"]),
        wrote="reserve", failed="charge",
    )


@dataclass
class Approval:
    """What the workflow asks a human."""

    amount: int
    reason: str


register_checkpoint_type(Approval)  # a pending request carries it: decoding must allow it


class Plan(Executor):
    @handler
    async def start(self, order: str, ctx: WorkflowContext[int]) -> None:
        ctx.set_state("order", order)
        await ctx.send_message(len(order) * 10)


class Ask(Executor):
    @handler
    async def ask(self, amount: int, ctx: WorkflowContext) -> None:
        await ctx.request_info(Approval(amount, "over the limit"), str)

    @response_handler
    async def answered(
        self, original: Approval, answer: str, ctx: WorkflowContext[None, str]
    ) -> None:
        ctx.set_state("decision", answer)
        await ctx.yield_output(f"{original.amount}: {answer}")


async def maf_workflow(log: EventLog, tenant: str, workflow: str,
                       answered_by: str | None = None) -> WorkflowRun:
    """plan keeps the order in the shared state and sends an amount to ask, which requests
    a human's approval; the workflow is resumed from its latest checkpoint with the
    answer, keeps the decision in the shared state and yields its output."""
    storage = EventlogCheckpointStorage(log, tenant_id=tenant)

    def build() -> Any:
        plan, ask = Plan(id="plan"), Ask(id="ask")
        return WorkflowBuilder(
            name=workflow, start_executor=plan, checkpoint_storage=storage
        ).add_edge(plan, ask).build()

    paused = await build().run("order")
    request = paused.get_request_info_events()[0]
    latest = await storage.get_latest(workflow_name=workflow)
    assert latest is not None
    with log.acting_as(answered_by) if answered_by is not None else nullcontext():
        done = await build().run(checkpoint_id=latest.checkpoint_id,
                                 responses={request.request_id: ANSWER})
    outputs = done.get_outputs()
    return WorkflowRun(
        tenant=tenant, workflow=workflow, executors=["plan", "ask"],
        request_id=str(request.request_id), question=request.data, answer=ANSWER,
        output=str(outputs[0]),
        checkpoint_ids=await storage.list_checkpoint_ids(workflow_name=workflow),
        shared_state={"order": "order", "decision": ANSWER},
    )


@dataclass
class Forensics:
    """Every helper's record, written into one tenant."""

    tenant: str
    interrupted: GraphRun
    forked: GraphRun
    subgraph: GraphRun
    crashed: GraphRun
    workflow: WorkflowRun


async def write_all(log: EventLog, tenant: str) -> Forensics:
    """All five threads in one tenant: ``trip``, ``forked``, ``nested``, ``crashed`` and
    the workflow ``payments``."""
    return Forensics(
        tenant=tenant,
        interrupted=await interrupted_thread(log, tenant, "trip"),
        forked=await forked_thread(log, tenant, "forked"),
        subgraph=await subgraph_thread(log, tenant, "nested"),
        crashed=await crashed_thread(log, tenant, "crashed"),
        workflow=await maf_workflow(log, tenant, "payments"),
    )


@dataclass
class Written:
    """A log holding the five threads in one tenant, and a stranger's crashed ``trip``."""

    target: BackendTarget
    threads: Forensics
    stranger: str


async def _write(target: BackendTarget) -> Written:
    tenant, stranger = fresh_id("acme"), fresh_id("stranger")
    async with target.open() as log:
        threads = await write_all(log, tenant)
        await crashed_thread(log, stranger, "trip")  # same thread id, another tenant
        await settle(log)
    return Written(target, threads, stranger)


def written_on(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    """The threads written once on ``backend`` (sqlite, postgresql or citus), for reading only; a
    PostgreSQL schema is dropped afterwards (the body of a module-scoped fixture)."""
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("threads") / "log.db"
        yield asyncio.run(_write(BackendTarget("sqlite", f"sqlite:///{path}")))
        return
    if backend == "citus":
        from tests.citus import cluster

        for target in cluster.target():
            yield asyncio.run(_write(target))
        return
    require_postgres()
    target = BackendTarget("postgresql", PG_URL, f"t_{uuid.uuid4().hex[:12]}")
    try:
        yield asyncio.run(_write(target))
    finally:
        asyncio.run(drop_schema(target.schema))
