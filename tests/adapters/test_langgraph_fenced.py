"""The LangGraph saver in single-writer mode (``fenced=True``): real graphs run as they do
unfenced, a fork, a stale put and a late write are refused, and LangGraph's conformance
suite passes but for the three tests that put several roots in one thread."""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from eventlog import InvalidInput, NotThreadHead
from eventlog.adapters.langgraph import FENCED_KEY, AsyncEventlogSaver, EventlogSaver
from eventlog.checkpoints.thread_decisions import thread_stream
from tests.adapters.langgraph_stores import build
from tests.conftest import CITUS, BackendTarget, fresh_id

TENANT = "acme"
REFUSED_BY_A_FENCE = {
    "list": {"test_list_metadata_filter_multiple_keys", "test_list_metadata_custom_keys"},
    "delete_for_runs": {"test_delete_for_runs_preserves_other_runs"},
}
"""The conformance tests a fenced saver refuses, and rightly: each puts two or three
checkpoints without a parent in one thread and namespace (two roots: a fork)."""


def thread(thread_id: str, **configurable: Any) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, **configurable}}


class Fan(TypedDict):
    results: Annotated[list[int], operator.add]


def fan_out(saver: Any) -> Any:
    """40 parallel tasks, each writing to the thread (``Send``)."""
    builder = StateGraph(Fan)
    builder.add_node("work", lambda state: {"results": state["results"]})
    builder.add_conditional_edges(
        START, lambda _: [Send("work", {"results": [i]}) for i in range(40)], ["work"])
    builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


async def run_everything(saver: Any, thread_id: str, durability: str) -> list[Any]:
    """Interrupt inside a subgraph, resume, update by hand, fan out: what each returned."""
    graph, config = build(saver), thread(thread_id)
    outcomes: list[Any] = [
        _asked(await graph.ainvoke({"items": []}, config, durability=durability)),
        await graph.ainvoke(Command(resume="yes"), config, durability=durability),
    ]
    await graph.aupdate_state(config, {"items": ["by hand"]})
    outcomes.append((await graph.aget_state(config)).values)
    fan = await fan_out(saver).ainvoke({"results": []}, thread(thread_id + "-fan"),
                                       durability=durability)
    outcomes.append(sorted(fan["results"]))
    return outcomes


def _asked(outcome: dict[str, Any]) -> dict[str, Any]:
    """An interrupted outcome with each interrupt's value (its id derives from task ids)."""
    return {**outcome, "__interrupt__": [item.value for item in outcome["__interrupt__"]]}


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql"], indirect=True)
async def test_real_graphs_run_on_a_fenced_saver_as_in_memory(
    target: BackendTarget, durability: str
) -> None:
    """A subgraph's interrupt and resume, an update and a 40-task fan-out give what
    LangGraph's in-memory saver gives, in every durability mode, and the log verifies."""
    thread_id = fresh_id("th")  # interrupt ids derive from it
    expected = await run_everything(InMemorySaver(), thread_id, durability)
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, fenced=True, **target.options()
    ) as saver:
        assert expected == await run_everything(saver, thread_id, durability)
        assert (await saver.log.verify()).ok


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_replay_fork_is_refused_unless_the_call_unfences(target: BackendTarget) -> None:
    """Invoking from an older checkpoint forks the thread: refused on a fenced saver,
    done when that call's config says ``eventlog_fenced: False``."""
    thread_id = fresh_id("th")
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, fenced=True, **target.options()
    ) as saver:
        graph = build(saver)
        await graph.ainvoke({"items": []}, thread(thread_id))
        await graph.ainvoke(Command(resume="first"), thread(thread_id))
        older = [s async for s in graph.aget_state_history(thread(thread_id))][-2].config
        with pytest.raises(NotThreadHead):
            await graph.ainvoke(None, older)
        unfenced = {**older, "configurable": {**older["configurable"], FENCED_KEY: False}}
        assert "__interrupt__" in await graph.ainvoke(None, unfenced)


async def put(saver: AsyncEventlogSaver, config: RunnableConfig) -> RunnableConfig:
    return await saver.aput(config, empty_checkpoint(), {"source": "loop", "step": 1}, {})


async def test_a_stale_writer_is_refused_and_writes_nothing() -> None:
    """A cancelled run's late put, on a parent another run has moved on from, is refused
    with the facts, and the thread's stream is unchanged (langgraph#8810)."""
    async with AsyncEventlogSaver.from_conn_string("memory://", fenced=True) as saver:
        first = await put(saver, thread("t", checkpoint_ns=""))
        second = await put(saver, first)
        before = await saver.log.stream_head("default", thread_stream("t"))
        with pytest.raises(NotThreadHead) as refused:
            await put(saver, first)
        assert ("t", "", first["configurable"]["checkpoint_id"],
                second["configurable"]["checkpoint_id"]) == (
            refused.value.thread_id, refused.value.namespace, refused.value.expected,
            refused.value.head)
        assert before == await saver.log.stream_head("default", thread_stream("t"))


async def test_late_puts_and_writes_after_delete_thread_are_refused() -> None:
    """The langgraph#7206 repro: put, keep the config, delete the thread, reuse the
    config in a put and in put_writes: both refused, and the thread stays empty."""
    async with AsyncEventlogSaver.from_conn_string("memory://", fenced=True) as saver:
        kept = await put(saver, thread("t", checkpoint_ns=""))
        await saver.adelete_thread("t")
        with pytest.raises(NotThreadHead):
            await put(saver, kept)
        with pytest.raises(NotThreadHead):
            await saver.aput_writes(kept, [("items", ["late"])], "task")
        assert await saver.aget_tuple(thread("t")) is None


async def test_unfenced_saver_fences_one_call_when_its_config_asks() -> None:
    """``eventlog_fenced: True`` fences that call on an unfenced saver, which otherwise
    forks as LangGraph's savers do; a value that is not a bool is refused."""
    async with AsyncEventlogSaver.from_conn_string("memory://") as saver:
        first = await put(saver, thread("t", checkpoint_ns=""))
        await put(saver, first)
        await put(saver, first)  # a fork, as LangGraph's own savers allow
        fenced = {"configurable": {**first["configurable"], FENCED_KEY: True}}
        with pytest.raises(NotThreadHead):
            await put(saver, fenced)
        with pytest.raises(InvalidInput, match=FENCED_KEY):
            await put(saver, {"configurable": {**first["configurable"], FENCED_KEY: "yes"}})
        assert 3 == len([c async for c in saver.alist(thread("t"))])
    with pytest.raises(InvalidInput, match="fenced"):
        AsyncEventlogSaver(saver.log, fenced=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("target", ["memory", "sqlite", "file", "postgresql", CITUS],
                         indirect=True)
async def test_conformance_on_a_fenced_saver(target: BackendTarget) -> None:
    """LangGraph's conformance suite: every capability passes on a fenced saver but for
    the tests that put several roots in one thread, each refused by the fence."""

    @checkpointer_test(name=f"fenced AsyncEventlogSaver[{target.name}]")
    async def factory() -> AsyncIterator[AsyncEventlogSaver]:
        async with AsyncEventlogSaver.from_conn_string(
            target.url, tenant_id="conformance", fenced=True, **target.options()
        ) as saver:
            yield saver

    report = await validate(factory)
    failures = {name: result.failures for name, result in report.results.items()
                if not result.passed}
    assert set(REFUSED_BY_A_FENCE) == set(failures)
    for capability, tests in REFUSED_BY_A_FENCE.items():
        assert tests == {failure.split(":")[0] for failure in failures[capability]}
        assert all("a put without a parent in a namespace that has a head" in failure
                   for failure in failures[capability])


def test_the_sync_saver_fences_too(tmp_path: Path) -> None:
    """``EventlogSaver.from_conn_string(fenced=True)``: a graph runs with ``invoke``, and
    a put on a parent the thread has moved on from is refused."""
    with EventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}", fenced=True) as saver:
        graph = build(saver)
        graph.invoke({"items": []}, thread("t"))
        done = graph.invoke(Command(resume="ok"), thread("t"))
        assert ["planned", "planned", "approved:ok", "done"] == done["items"]
        oldest = list(saver.list(thread("t")))[-1].config
        with pytest.raises(NotThreadHead):
            saver.put(oldest, empty_checkpoint(), {"source": "loop", "step": 9}, {})
