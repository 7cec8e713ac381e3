"""A LangGraph thread and an Agent Framework workflow of one name in one tenant.

Both adapters write the stream ``thread:<name>``: the second framework to use a name is
refused with `FrameworkConflict`, in either order, on SQLite and PostgreSQL, with the real
compiled graph and the real workflow of the guide; never the other framework's error.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from agent_framework import (
    CheckpointStorage,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    handler,
    register_checkpoint_type,
    response_handler,
)
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from eventlog import EventLogError, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.errors import FrameworkConflict
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres

TENANT = "acme"
NAME = "trip-42"


class Trip(TypedDict):
    steps: Annotated[list[str], operator.add]


def book(state: Trip) -> dict[str, Any]:
    return {"steps": ["booked"]}


def pay(state: Trip) -> dict[str, Any]:
    return {"steps": [f"paid: {interrupt('pay 420 EUR?')}"]}


def graph(saver: AsyncEventlogSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    built = StateGraph(Trip)
    built.add_node("book", book)
    built.add_node("pay", pay)
    built.add_edge(START, "book")
    built.add_edge("book", "pay")
    built.add_edge("pay", END)
    return built.compile(checkpointer=saver)


@dataclass
class Approval:
    amount: int


register_checkpoint_type(Approval)


class Quote(Executor):
    @handler
    async def quote(self, trip: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(420)


class Pay(Executor):
    @handler
    async def ask(self, amount: int, ctx: WorkflowContext) -> None:
        await ctx.request_info(Approval(amount), str)

    @response_handler
    async def paid(self, asked: Approval, answer: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(f"{asked.amount} EUR: {answer}")


def workflow(storage: CheckpointStorage, name: str = NAME) -> Workflow:
    quote, pay_ = Quote(id="quote"), Pay(id="pay")
    return WorkflowBuilder(name=name, start_executor=quote,
                           checkpoint_storage=storage).add_edge(quote, pay_).build()


def config(thread_id: str = NAME) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """A fresh SQLite file or PostgreSQL schema."""
    if request.param == "sqlite":
        yield BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    else:
        require_postgres()
        schema = f"t_{uuid.uuid4().hex[:12]}"
        yield BackendTarget("postgresql", PG_URL, schema)
        asyncio.run(drop_schema(schema))


async def run_workflow(store: BackendTarget, tenant: str = TENANT, name: str = NAME) -> None:
    async with EventlogCheckpointStorage.from_url(
        store.url, tenant_id=tenant, **store.options()
    ) as storage:
        await workflow(storage, name).run("Lisbon")


async def run_graph(store: BackendTarget, tenant: str = TENANT, thread: str = NAME) -> None:
    async with AsyncEventlogSaver.from_conn_string(
        store.url, tenant_id=tenant, **store.options()
    ) as saver:
        await graph(saver).ainvoke(Trip(steps=[]), config(thread))


async def events_of(store: BackendTarget, tenant: str = TENANT) -> list[str]:
    async with store.open() as log:
        return [event.type async for event in log.read_stream(tenant, f"thread:{NAME}")]


async def test_a_graph_on_a_workflows_thread_is_refused(store: BackendTarget) -> None:
    """Agent Framework first: the LangGraph run gets FrameworkConflict naming both."""
    await run_workflow(store)
    with pytest.raises(FrameworkConflict) as refused:
        await run_graph(store)
    assert (TENANT, NAME, "Agent Framework", "LangGraph") == (
        refused.value.tenant_id, refused.value.thread_id, refused.value.holder,
        refused.value.caller)


async def test_a_workflow_on_a_graphs_thread_is_refused(store: BackendTarget) -> None:
    """LangGraph first: the workflow's save gets FrameworkConflict naming both."""
    await run_graph(store)
    async with EventlogCheckpointStorage.from_url(
        store.url, tenant_id=TENANT, **store.options()
    ) as storage:
        with pytest.raises(FrameworkConflict) as refused:
            await storage.save(WorkflowCheckpoint(workflow_name=NAME, graph_signature_hash="g"))
    assert ("LangGraph", "Agent Framework") == (refused.value.holder, refused.value.caller)


async def test_a_refused_workflow_writes_nothing_and_says_why(
    store: BackendTarget, caplog: pytest.LogCaptureFixture
) -> None:
    """MAF runs on without checkpoints when a save fails: the graph's stream keeps only
    what the graph wrote, and MAF's warning carries our reason."""
    await run_graph(store)
    before = await events_of(store)
    await run_workflow(store)
    assert (before, True) == (await events_of(store), any(
        "holds LangGraph checkpoints, so Agent Framework cannot use it" in record.getMessage()
        for record in caplog.records))


async def test_a_refused_graph_writes_nothing(store: BackendTarget) -> None:
    """The workflow's stream is what the workflow wrote, nothing of the graph."""
    await run_workflow(store)
    before = await events_of(store)
    with pytest.raises(FrameworkConflict):
        await run_graph(store)
    assert before == await events_of(store)


async def test_the_conflict_is_one_of_ours_and_names_the_fix(tmp_path: Path) -> None:
    """An EventLogError (and ValueError) whose message says how to get out of it."""
    store = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    await run_workflow(store)
    with pytest.raises(EventLogError) as refused:
        await run_graph(store)
    assert (
        "thread_id: thread 'trip-42' of tenant 'acme' holds Agent Framework checkpoints, so "
        "LangGraph cannot use it: give one of them another name (LangGraph's thread_id, "
        "Agent Framework's workflow name) or another tenant_id"
    ) == str(refused.value)


async def test_the_same_name_in_another_tenant_is_no_conflict(tmp_path: Path) -> None:
    """Tenants are walls: a workflow of acme does not hold globex's thread of that name."""
    store = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    await run_workflow(store)
    await run_graph(store, tenant="globex")
    assert 2 <= len(await events_of(store, "globex"))


async def test_both_frameworks_share_a_tenant_under_different_names(tmp_path: Path) -> None:
    """list(None) lists the tenant's LangGraph threads, not its workflows."""
    store = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    await run_workflow(store, name="quote-7")
    await run_graph(store, thread="trip-9")
    async with AsyncEventlogSaver.from_conn_string(store.url, tenant_id=TENANT) as saver:
        threads = {t.config["configurable"]["thread_id"] async for t in saver.alist(None)}
    assert {"trip-9"} == threads


async def test_a_graph_may_not_delete_a_workflows_thread(tmp_path: Path) -> None:
    """delete_thread of a workflow's name is refused and deletes nothing."""
    store = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'eventlog.db'}")
    await run_workflow(store)
    async with open_log(store.url) as log:
        saver = AsyncEventlogSaver(log, tenant_id=TENANT)
        with pytest.raises(FrameworkConflict):
            await saver.adelete_thread(NAME)
        storage = EventlogCheckpointStorage(log, tenant_id=TENANT)
        assert await storage.get_latest(workflow_name=NAME) is not None
