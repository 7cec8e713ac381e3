"""The LangGraph saver loads in LangGraph's strict mode (CVE-2026-28277), with the types
the application allows; adoption refuses a value naming any other type."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from eventlog import open_log
from eventlog.adapters._langgraph_serde import UnallowedTypeWarning
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.adapters.langgraph_adoption import adopt_langgraph
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from eventlog.errors import AdoptionFailed
from tests.adapters.langgraph_stores import history, sqlite_saver, thread
from tests.conftest import BackendTarget, fresh_id

TENANT = "acme"


@dataclass
class Order:
    """A type of the application's own, kept in the graph's state."""

    number: int
    placed: dt.datetime


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    order: Order | None
    ref: uuid.UUID | None


PLACED = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
REF = uuid.UUID(int=42)


def answer(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("on its way", id="ai-1")], "order": Order(7, PLACED),
            "ref": REF}


def build(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(State)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


async def run(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    await build(saver).ainvoke(
        {"messages": [HumanMessage("ship it?", id="h-1")], "order": None, "ref": None},
        thread(thread_id))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_messages_and_allowed_types_round_trip(target: BackendTarget) -> None:
    """LangGraph's safe types and the application's allowed ones come back as themselves."""
    thread_id = fresh_id("th")
    async with AsyncEventlogSaver.from_conn_string(
            target.url, tenant_id=TENANT, allowed_msgpack_modules=[Order],
            **target.options()) as saver:
        await run(saver, thread_id)
        values = (await build(saver).aget_state(thread(thread_id))).values
    assert [HumanMessage("ship it?", id="h-1"), AIMessage("on its way", id="ai-1")] == (
        values["messages"])
    assert (Order(7, PLACED), REF) == (values["order"], values["ref"])


async def test_a_type_outside_the_allow_list_comes_back_as_its_fields(tmp_path: Path) -> None:
    """The default is LangGraph's strict mode: an unlisted class (one this saver never
    wrote) is not imported; its stored fields come back instead, with a warning naming
    the setting (``True`` is LangGraph's permissive mode)."""
    thread_id = fresh_id("th")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with AsyncEventlogSaver.from_conn_string(
            url, tenant_id=TENANT, allowed_msgpack_modules=True) as saver:
        await run(saver, thread_id)
    async with AsyncEventlogSaver.from_conn_string(url, tenant_id=TENANT) as strict:
        with pytest.warns(UnallowedTypeWarning, match=r"allowed_msgpack_modules=\[\("):
            found = await strict.aget_tuple(thread(thread_id))
    async with AsyncEventlogSaver.from_conn_string(
            url, tenant_id=TENANT, allowed_msgpack_modules=True) as permissive:
        loose = await permissive.aget_tuple(thread(thread_id))
    assert found is not None
    assert loose is not None
    assert {"number": 7, "placed": PLACED} == found.checkpoint["channel_values"]["order"]
    assert Order(7, PLACED) == loose.checkpoint["channel_values"]["order"]
    assert REF == found.checkpoint["channel_values"]["ref"]


async def test_the_savers_own_load_does_not_run_a_stored_constructor(tmp_path: Path) -> None:
    """A channel value naming ``os.system`` is loaded as its argument, never called."""
    marker = tmp_path / "ran"
    call = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", f"touch {marker}"))))
    state = {"v": 4, "id": "1", "ts": "2030-01-01T00:00:00+00:00",
             "channel_versions": {"x": "1"}, "versions_seen": {}, "updated_channels": ["x"]}
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.threads.put(TENANT, "t", "1", state=Payload(
            *JsonPlusSerializer().dumps_typed(state)), channels={
            "x": ChannelValue("1", Payload("msgpack", call))})
        with pytest.warns(UnallowedTypeWarning, match="naming os.system was not built"):
            found = await AsyncEventlogSaver(log, tenant_id=TENANT).aget_tuple(thread("t"))
    assert found is not None
    assert (False, f"touch {marker}") == (marker.exists(), found.checkpoint["channel_values"]["x"])


async def test_an_allow_list_needs_langgraphs_serializer(tmp_path: Path) -> None:
    """Widening a serializer of the application's own is its own business: refused here."""

    class Own(SerializerProtocol):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            raise NotImplementedError

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            raise NotImplementedError

    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        with pytest.raises(TypeError, match="configure the serializer itself"):
            AsyncEventlogSaver(log, tenant_id=TENANT, serde=Own(),
                               allowed_msgpack_modules=[Order])


async def test_adoption_refuses_an_unlisted_type_and_takes_an_allowed_one(
    tmp_path: Path,
) -> None:
    """A source whose values name the application's class: refused by default, naming the
    class and how to allow it; adopted whole once it is allowed."""
    thread_id = fresh_id("th")
    async with sqlite_saver(tmp_path / "lg.db") as source, open_log(
            f"sqlite:///{tmp_path / 'log.db'}") as log:
        await run(source, thread_id)
        with pytest.raises(AdoptionFailed) as caught:
            await adopt_langgraph(log, source, tenant_id=TENANT, dry_run=True)
        assert f"{__name__}.Order" in str(caught.value)
        assert f"--allow-type {__name__}:Order" in str(caught.value)
        with pytest.raises(AdoptionFailed):
            await adopt_langgraph(log, source, tenant_id=TENANT)
        report = await adopt_langgraph(log, source, tenant_id=TENANT,
                                       allowed_msgpack_modules=[Order])
        ours = AsyncEventlogSaver(log, tenant_id=TENANT, allowed_msgpack_modules=[Order])
        assert (await history(source, thread_id)) == (await history(ours, thread_id))
        assert 0 < report.checkpoints
        assert (await log.verify()).ok
