"""Real compiled LangGraph graphs (plain-Python nodes) checkpointing on the event log."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send, interrupt

from eventlog import open_log
from eventlog.adapters.langgraph import (
    AsyncEventlogSaver,
    EventlogSaver,
    NotRunning,
    WrongThread,
)
from projections import compare_views
from tests.conftest import CITUS, SEALED_POSTGRESQL, SEALED_SQLITE, BackendTarget, fresh_id
from tests.procs.settle import settle

TENANT = "acme"


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
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("approve", approve)
    builder.add_node("finish", finish)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


def build_with_subgraph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
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


sql_targets = pytest.mark.parametrize(
    "target", ["sqlite", "postgresql", CITUS, SEALED_SQLITE, SEALED_POSTGRESQL], indirect=True)
"""The real graphs on each SQL backend, element-stored lists included (Citus in its
campaign), and on encrypted SQLite and PostgreSQL logs (the sealed campaign)."""


@sql_targets
async def test_interrupt_restart_resume_update_and_history(target: BackendTarget) -> None:
    """A run interrupts, a new saver over the same store resumes it, history filters."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, **target.options()
    ) as saver:
        first = await build(saver).ainvoke({"items": []}, config)
    assert "__interrupt__" in first
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, **target.options()
    ) as saver:
        graph = build(saver)
        waiting = await graph.aget_state(config)
        assert ("approve",) == waiting.next
        assert "ship it?" == waiting.tasks[0].interrupts[0].value["question"]
        done = await graph.ainvoke(Command(resume="yes"), config)
        assert ["planned", "approved:yes", "done"] == done["items"]
        await graph.aupdate_state(config, {"items": ["by hand"]})
        updates = [s async for s in graph.aget_state_history(config, filter={"source": "update"})]
        assert 1 == len(updates)
        assert ["planned", "approved:yes", "done", "by hand"] == (
            await graph.aget_state(config)
        ).values["items"]
        history = [s async for s in graph.aget_state_history(config)]
        assert 2 == len([s async for s in graph.aget_state_history(config, limit=2)])
        assert [s.config["configurable"]["checkpoint_id"] for s in history] == sorted(
            (s.config["configurable"]["checkpoint_id"] for s in history), reverse=True
        )
        await settle(saver.log)
        assert (await saver.log.verify()).ok
        assert [] == await compare_views(saver.log)
        assert (target.keyring is not None) == (saver.log.sealer is not None)


@sql_targets
async def test_replay_fork_from_an_earlier_checkpoint(target: BackendTarget) -> None:
    """Invoking from an old checkpoint forks: the interrupt comes back, resumes anew."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, **target.options()
    ) as saver:
        graph = build(saver)
        await graph.ainvoke({"items": []}, config)
        await graph.ainvoke(Command(resume="first"), config)
        waiting = [s async for s in graph.aget_state_history(config) if s.next == ("approve",)]
        before_approve = waiting[-1]
        forked = await graph.ainvoke(None, before_approve.config)
        assert "__interrupt__" in forked
        done = await graph.ainvoke(Command(resume="second"), config)
        assert ["planned", "approved:second", "done"] == done["items"]
        assert (await saver.log.verify()).ok


@sql_targets
async def test_subgraph_interrupt_keeps_namespaces_apart(target: BackendTarget) -> None:
    """A subgraph's checkpoints live in their own namespace of the same thread."""
    thread_id = fresh_id("th")
    config = thread(thread_id)
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, **target.options()
    ) as saver:
        graph = build_with_subgraph(saver)
        first = await graph.ainvoke({"items": []}, config)
        assert "__interrupt__" in first
        state = await graph.aget_state(config, subgraphs=True)
        assert state.tasks[0].state is not None
        namespaces = await saver.log.checkpoints.threads.namespaces(TENANT, thread_id)
        assert "" in namespaces
        assert any(namespace.startswith("review:") for namespace in namespaces)
        done = await graph.ainvoke(Command(resume="ok"), config)
        assert await _in_memory_outcome() == done
        await saver.adelete_thread(thread_id)
        assert [] == await saver.log.checkpoints.threads.namespaces(TENANT, thread_id)
        assert (await saver.log.verify()).ok


async def _in_memory_outcome() -> dict[str, Any]:
    """What LangGraph's own InMemorySaver gives for the subgraph run (the reference)."""
    graph = build_with_subgraph(InMemorySaver())
    await graph.ainvoke({"items": []}, thread("reference"))
    return await graph.ainvoke(Command(resume="ok"), thread("reference"))


async def test_a_retried_put_of_an_old_id_does_not_become_latest(tmp_path: Path) -> None:
    """Putting an old checkpoint again leaves the latest where it was."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
        graph = build(saver)
        await graph.ainvoke({"items": []}, config)
        latest = await saver.aget_tuple(config)
        oldest = [t async for t in saver.alist(config)][-1]
        assert latest is not None
        assert oldest.config != latest.config
        parent = oldest.parent_config or config
        await saver.aput(parent, oldest.checkpoint, oldest.metadata, {})
        again = await saver.aget_tuple(config)
        assert again is not None
        assert latest.config == again.config
        assert len([t async for t in saver.alist(config)]) == len(
            [t async for t in saver.alist(config)]
        )


async def test_tenants_are_walls(tmp_path: Path) -> None:
    """A saver sees only its tenant's threads, list(None) included."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    async with open_log(url) as log:
        acme = AsyncEventlogSaver(log, tenant_id="acme")
        other = AsyncEventlogSaver(log, tenant_id="other")
        await build(acme).ainvoke({"items": []}, thread("shared-name"))
        assert [] == [t async for t in other.alist(None)]
        assert await other.aget_tuple(thread("shared-name")) is None
        assert [] != [t async for t in acme.alist(None)]


async def test_sync_methods_refuse_on_the_loop_and_work_from_threads(tmp_path: Path) -> None:
    """On the saver's own loop a blocking call refuses; from a worker thread it works."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
        await build(saver).ainvoke({"items": []}, config)
        with pytest.raises(WrongThread, match="aget_tuple"):
            saver.get_tuple(config)
        found = await asyncio.to_thread(saver.get_tuple, config)
        assert found is not None
        listed = await asyncio.to_thread(lambda: list(saver.list(config)))
        assert found.config == listed[0].config


def test_sync_saver_runs_a_graph_from_a_plain_program(tmp_path: Path) -> None:
    """EventlogSaver serves graph.invoke with no event loop in the program."""
    config = thread(fresh_id("th"))
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with EventlogSaver.from_conn_string(url, tenant_id=TENANT) as saver:
        graph = build(saver)
        assert "__interrupt__" in graph.invoke({"items": []}, config)
    with EventlogSaver.from_conn_string(url, tenant_id=TENANT) as saver:
        graph = build(saver)
        done = graph.invoke(Command(resume="sync"), config)
        assert ["planned", "approved:sync", "done"] == done["items"]
        assert 1 == len(list(graph.get_state_history(config, filter={"source": "input"})))
        forwarded = asyncio.run(graph.aget_state(config))      # from another loop: forwarded
        assert ["planned", "approved:sync", "done"] == forwarded.values["items"]
        saver.delete_thread(config["configurable"]["thread_id"])
        assert saver.get_tuple(config) is None


def test_sync_methods_refuse_when_the_loop_is_not_running(tmp_path: Path) -> None:
    """A blocking call on a saver whose loop has finished says so instead of hanging."""
    url = f"sqlite:///{tmp_path / 'l.db'}"

    async def make() -> AsyncEventlogSaver:
        async with AsyncEventlogSaver.from_conn_string(url) as saver:
            await saver.aget_tuple(thread("t"))
            return saver

    saver = asyncio.run(make())
    with pytest.raises(NotRunning, match="get_tuple"):
        saver.get_tuple(thread("t"))


def test_timeline_and_verify_show_a_langgraph_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eventlog timeline TENANT THREAD`` tells the thread's story; verify passes."""
    from eventlog.cli import EXIT_OK, main

    url = f"sqlite:///{tmp_path / 'l.db'}"
    config = thread("trip-9")
    with EventlogSaver.from_conn_string(url, tenant_id=TENANT) as saver:
        graph = build(saver)
        graph.invoke({"items": []}, config)
        graph.invoke(Command(resume="yes"), config)
        saver.prune(["trip-9"])
    capsys.readouterr()
    assert EXIT_OK == main(["timeline", "--url", url, "--json", TENANT, "trip-9"])
    story = capsys.readouterr().out
    assert '"checkpoint"' in story
    assert '"pending writes"' in story
    assert "pruned to the latest 1 per namespace" in story
    assert EXIT_OK == main(["verify", "--url", url])


class Fan(TypedDict):
    results: Annotated[list[int], operator.add]


def test_a_wide_fan_out_writes_every_task(tmp_path: Path) -> None:
    """150 parallel tasks writing to one thread at once all land (no exhausted retries)."""

    def spread(state: Fan) -> list[Send]:
        return [Send("work", {"results": [i]}) for i in range(150)]

    def work(state: Fan) -> dict[str, Any]:
        return {"results": state["results"]}

    async def run() -> list[int]:
        async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
            builder = StateGraph(Fan)
            builder.add_node("work", work)
            builder.add_conditional_edges(START, spread, ["work"])
            builder.add_edge("work", END)
            out = await builder.compile(checkpointer=saver).ainvoke({"results": []}, thread("f"))
            assert (await saver.log.verify()).ok
            return sorted(out["results"])

    assert list(range(150)) == asyncio.run(run())


async def test_export_and_import_carry_a_thread(tmp_path: Path) -> None:
    """A tenant export of a graph's thread imports into a new log that resumes it."""
    import io

    from eventlog.transfer import export_log, import_log

    config = thread("moved")
    async with AsyncEventlogSaver.from_conn_string(
        f"sqlite:///{tmp_path / 'a.db'}", tenant_id=TENANT
    ) as saver:
        await build(saver).ainvoke({"items": []}, config)
        exported = io.BytesIO()
        await export_log(saver.log, exported, tenant_id=TENANT)
    exported.seek(0)
    async with AsyncEventlogSaver.from_conn_string(
        f"sqlite:///{tmp_path / 'b.db'}", tenant_id=TENANT
    ) as saver:
        await import_log(saver.log, exported)
        done = await build(saver).ainvoke(Command(resume="after the move"), config)
        assert ["planned", "approved:after the move", "done"] == done["items"]
        assert (await saver.log.verify()).ok
        assert [] == await compare_views(saver.log)


async def test_list_with_a_limit_below_one_lists_nothing(tmp_path: Path) -> None:
    """limit=0 is an empty page, as in LangGraph's SQL savers."""
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
        await build(saver).ainvoke({"items": []}, thread("t"))
        assert [] == [t async for t in saver.alist(thread("t"), limit=0)]
