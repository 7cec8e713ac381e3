"""The saver builds what LangGraph's strict allow-list builds: the types of the graph's
state, not only LangGraph's safe ones. LangGraph's own ``test_conditional_graph_state`` and
``test_conditional_state_graph`` (an agent whose state holds ``AgentAction``) failed on it:
the state read back ``AgentAction`` as a dict, silently. A type it will not build is now
said loudly, naming the setting that allows it."""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.agents import AgentAction, AgentFinish
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, StateGraph
from langgraph.graph.state import CompiledStateGraph

from eventlog.adapters._langgraph_serde import UnallowedTypeWarning
from eventlog.adapters.langgraph import AsyncEventlogSaver, EventlogSaver
from tests.adapters.langgraph_stores import thread
from tests.conftest import BackendTarget, fresh_id

TENANT = "acme"
FIRST = AgentAction(tool="search", tool_input="query", log="tool:search:query")
CHANGED = AgentAction(tool="search", tool_input="query", log="tool:search:another query")


class AgentState(TypedDict):
    input: str
    agent_outcome: AgentAction | AgentFinish | None
    intermediate_steps: Annotated[list[tuple[AgentAction, str]], operator.add]


def _agent(state: AgentState) -> dict[str, Any]:
    if state.get("intermediate_steps"):
        return {"agent_outcome": AgentFinish(return_values={"answer": "sunny"}, log="done")}
    return {"agent_outcome": FIRST}


def _tools(state: AgentState) -> dict[str, Any]:
    action = state["agent_outcome"]
    assert isinstance(action, AgentAction), f"the tool got {type(action).__name__}"
    return {"intermediate_steps": [(action, f"result for {action.tool_input}")]}


def agent(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent of LangGraph's two tests: agent → tools → agent, stopped after agent."""
    graph = StateGraph(AgentState)
    graph.add_node("agent", _agent)
    graph.add_node("tools", _tools)
    graph.set_entry_point("agent")
    graph.add_conditional_edges(
        "agent", lambda s: "exit" if isinstance(s["agent_outcome"], AgentFinish) else "go",
        {"go": "tools", "exit": END})
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver, interrupt_after=["agent"])


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_an_agent_s_state_types_come_back_as_themselves(target: BackendTarget) -> None:
    """Stopped after the agent, the state holds the AgentAction (not its fields); an
    update_state with another is read back as one; resumed, the tool gets it and the
    steps hold AgentActions; no warning on the way."""
    config = thread(fresh_id("th"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnallowedTypeWarning)
        async with AsyncEventlogSaver.from_conn_string(
                target.url, tenant_id=TENANT, **target.options()) as saver:
            app = agent(saver)
            await app.ainvoke({"input": "weather?"}, config)
            stopped = (await app.aget_state(config)).values["agent_outcome"]
            await app.aupdate_state(config, {"agent_outcome": CHANGED})
            updated = (await app.aget_state(config)).values["agent_outcome"]
            await app.ainvoke(None, config)
            done = await app.aget_state(config)
    assert (FIRST, CHANGED) == (stopped, updated)
    assert [(CHANGED, "result for query")] == [
        tuple(step) for step in done.values["intermediate_steps"]]


def test_the_blocking_saver_too(tmp_path: Any) -> None:
    """The same through `EventlogSaver` and graph.invoke (LangGraph's sync test)."""
    config = thread(fresh_id("th"))
    with EventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'log.db'}",
                                        tenant_id=TENANT) as saver:
        app = agent(saver)
        app.invoke({"input": "weather?"}, config)
        assert FIRST == app.get_state(config).values["agent_outcome"]


async def _written_by_another(url: str, thread_id: str) -> None:
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id=TENANT) as writer:
        await agent(writer).ainvoke({"input": "weather?"}, thread(thread_id))


async def test_a_type_it_will_not_build_is_said_loudly(tmp_path: Any) -> None:
    """A saver that never wrote an AgentAction (another process's, a restart) reads one
    back as its fields, as LangGraph's strict mode does, but warns, naming the type and
    the setting; once per type."""
    url, thread_id = f"sqlite:///{tmp_path / 'log.db'}", fresh_id("th")
    await _written_by_another(url, thread_id)
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id=TENANT) as reader:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            first = await reader.aget_tuple(thread(thread_id))
            await reader.aget_tuple(thread(thread_id))
    said = [warning for warning in said if warning.category is UnallowedTypeWarning]
    assert first is not None
    assert isinstance(first.checkpoint["channel_values"]["agent_outcome"], dict)
    [message] = [str(warning.message) for warning in said]
    assert "langchain_core.agents.AgentAction" in message
    assert "allowed_msgpack_modules=[('langchain_core.agents', 'AgentAction')]" in message


async def test_the_application_s_allow_list_builds_it_quietly(tmp_path: Any) -> None:
    """allowed_msgpack_modules=[AgentAction] builds it in a saver that never wrote one."""
    url, thread_id = f"sqlite:///{tmp_path / 'log.db'}", fresh_id("th")
    await _written_by_another(url, thread_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnallowedTypeWarning)
        async with AsyncEventlogSaver.from_conn_string(
                url, tenant_id=TENANT, allowed_msgpack_modules=[AgentAction]) as reader:
            found = await reader.aget_tuple(thread(thread_id))
    assert found is not None
    assert FIRST == found.checkpoint["channel_values"]["agent_outcome"]


async def test_the_graph_s_types_handed_over_are_built(tmp_path: Any) -> None:
    """What LangGraph's strict mode hands a checkpointer (``with_allowlist``, the types of
    a compiled graph's state) is built by the copy it returns."""
    url, thread_id = f"sqlite:///{tmp_path / 'log.db'}", fresh_id("th")
    await _written_by_another(url, thread_id)
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id=TENANT) as reader:
        handed = reader.with_allowlist({("langchain_core.agents", "AgentAction")})
        found = await handed.aget_tuple(thread(thread_id))
    assert found is not None
    assert FIRST == found.checkpoint["channel_values"]["agent_outcome"]


def test_the_saver_writes_langgraph_s_bytes() -> None:
    """Learning the classes it writes changes nothing written: LangGraph's bytes, byte for
    byte (its private encoder options are tracked by this test)."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from eventlog.adapters._langgraph_serde import StrictSerializer

    values = [None, b"raw", bytearray(b"raw"), {"n": 1, "s": {1, 2}}, [FIRST, ("x", 2)],
              AIMessage("hi", id="m"), {"outcome": CHANGED, "steps": [(FIRST, "r")]}]
    ours, langgraph = StrictSerializer(), JsonPlusSerializer(allowed_msgpack_modules=None)
    assert [langgraph.dumps_typed(value) for value in values] == [
        ours.dumps_typed(value) for value in values]
