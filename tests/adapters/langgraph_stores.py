"""LangGraph's own savers on real stores, for the adoption tests: a SQLite file, or a
fresh schema of the test PostgreSQL database (its URL names the schema in ``options``)."""

from __future__ import annotations

import operator
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import asyncpg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from tests.conftest import PG_URL, require_postgres


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def plan(state: State) -> dict[str, Any]:
    return {"items": ["planned"]}


def approve(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "ship it?", "so_far": state["items"]})
    return {"items": [f"approved:{answer}"]}


def finish(state: State) -> dict[str, Any]:
    return {"items": ["done"]}


def build(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """plan, then a subgraph that asks (its own namespace), then finish."""
    inner = StateGraph(State)
    inner.add_node("approve", approve)
    inner.add_edge(START, "approve")
    inner.add_edge("approve", END)
    outer = StateGraph(State)
    outer.add_node("plan", plan)
    outer.add_node("review", inner.compile())
    outer.add_node("finish", finish)
    outer.add_edge(START, "plan")
    outer.add_edge("plan", "review")
    outer.add_edge("review", "finish")
    outer.add_edge("finish", END)
    return outer.compile(checkpointer=saver)


def thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


async def history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[tuple[Any, ...]]:
    """Every checkpoint of the thread in every namespace, as `aget_state_history` shows
    the root's and `alist` the rest: (namespace, id, parent, metadata, values, writes)."""
    found = []
    async for item in saver.alist(thread(thread_id)):
        configurable = item.config["configurable"]
        parent = None if item.parent_config is None else item.parent_config[
            "configurable"]["checkpoint_id"]
        found.append((
            configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"], parent,
            item.metadata, item.checkpoint["channel_values"], item.checkpoint["ts"],
            sorted((task, channel, repr(value))
                   for task, channel, value in item.pending_writes or []),
        ))
    return sorted(found, key=lambda row: (row[1], row[0]))


async def state_history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[tuple[Any, ...]]:
    """The root graph's `aget_state_history`: ids, parents, metadata, values, next."""
    return [
        (s.config["configurable"]["checkpoint_id"],
         None if s.parent_config is None else s.parent_config["configurable"]["checkpoint_id"],
         s.metadata, s.values, s.next)
        async for s in build(saver).aget_state_history(thread(thread_id))
    ]


def postgres_url(schema: str) -> str:
    """The test database with ``schema`` as the search path (what LangGraph's saver uses)."""
    return f"{PG_URL}?options=-csearch_path%3D{schema}"


@asynccontextmanager
async def postgres_saver(schema: str, *, setup: bool = True) -> AsyncIterator[AsyncPostgresSaver]:
    """LangGraph's AsyncPostgresSaver on a fresh schema (created here, dropped by the
    ``pg_schema`` fixture)."""
    require_postgres()
    connection = await asyncpg.connect(PG_URL)
    try:
        await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    finally:
        await connection.close()
    async with AsyncPostgresSaver.from_conn_string(postgres_url(schema)) as saver:
        if setup:
            await saver.setup()
        yield saver


@asynccontextmanager
async def sqlite_saver(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """LangGraph's AsyncSqliteSaver on a file."""
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


def fresh_schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"
