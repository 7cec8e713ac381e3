"""The thread story of a LangGraph chat stored element by element: each step's
``messages`` is the whole list, read back from its manifest and elements, one message
longer than the step before (what the step added)."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints.elements import ELEMENTS_ENCODING
from eventlog.cli.thread_story import build_thread_story, read_payloads
from eventlog.events.threads import ThreadCheckpointPut
from tests.conftest import CITUS, BackendTarget


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


def talk(state: Chat) -> dict[str, Any]:
    step = state["steps"] + 1
    return {"messages": [AIMessage(f"answer number {step}", id=f"ai-{step}")], "steps": step}


def route(state: Chat) -> str:
    return END if state["steps"] >= 4 else "talk"


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", CITUS], indirect=True)
async def test_each_step_shows_the_list_with_the_message_it_added(
        target: BackendTarget) -> None:
    """Steps 1..4 show messages of 2..5 items, the last one the step's own answer."""
    graph = StateGraph(Chat)
    graph.add_node("talk", talk)
    graph.add_edge(START, "talk")
    graph.add_conditional_edges("talk", route)
    async with open_log(target.url, **target.options()) as log:
        saver = AsyncEventlogSaver(log, tenant_id="t")
        await graph.compile(checkpointer=saver).ainvoke(
            {"messages": [HumanMessage("hello", id="h")], "steps": 0},
            {"configurable": {"thread_id": "chat"}})
        events = [event async for event in log.read_stream("t", "thread:chat")]
        payloads = await read_payloads(log, "t", events)
    assert any(ref.encoding == ELEMENTS_ENCODING for event in events
               if isinstance(event.event, ThreadCheckpointPut) for ref in event.event.channels)
    story, _ = build_thread_story("chat", events, payloads)
    shown = [change.value for step in story.steps for change in step.changed
             if change.name == "messages"]
    assert [1, 2, 3, 4, 5] == [len(value) for value in shown]
    for step, value in enumerate(shown[1:], start=1):
        assert f"answer number {step}" in repr(value[-1])
