"""Who did it, through the framework adapters: LangGraph's ``configurable["actor"]`` and
Agent Framework's storage ``actor`` and `acting_as` blocks, on real graphs and workflows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langgraph.types import Command

from eventlog import InvalidInput, OpenLog, open_log
from eventlog.adapters.langgraph import ACTOR_KEY, AsyncEventlogSaver, EventlogSaver
from eventlog.adapters.maf import EventlogCheckpointStorage
from tests.adapters.test_langgraph_graph import build as build_graph
from tests.adapters.test_maf import TENANT, checkpoint
from tests.adapters.test_maf import build as build_workflow


async def actors(log: OpenLog, stream: str) -> list[tuple[str, str | None]]:
    """(type, actor) of each event of one of the tenant's streams."""
    return [(event.type, event.actor) async for event in log.read_stream(TENANT, stream)]


async def test_a_graph_resumed_by_an_approver_records_them(tmp_path: Path) -> None:
    """The run's puts and writes carry the saver's actor; the resume's carry
    ``configurable["actor"]`` (the approver of the ``Command(resume=...)``)."""
    async with open_log(f"sqlite:///{tmp_path / 'l.db'}") as log:
        saver = AsyncEventlogSaver(log, tenant_id=TENANT, actor="service:planner")
        graph = build_graph(saver)
        await graph.ainvoke({"items": []}, {"configurable": {"thread_id": "t1"}})
        before = len(await actors(log, "thread:t1"))
        await graph.ainvoke(Command(resume="yes"), {"configurable": {
            "thread_id": "t1", ACTOR_KEY: "alice@example.com"}})
        seen = await actors(log, "thread:t1")
        assert {"service:planner"} == {actor for _, actor in seen[:before]}
        assert {"alice@example.com"} == {actor for _, actor in seen[before:]}
        assert {"thread_checkpoint_put", "thread_writes_put"} <= {t for t, _ in seen[before:]}
        assert (await log.verify()).ok


async def test_an_acting_as_block_reaches_the_saver_and_configurable_wins(
    tmp_path: Path
) -> None:
    """Inside `acting_as` a graph's events carry the block's principal (over the saver's
    and the log's); ``configurable["actor"]`` wins over the block."""
    async with open_log(f"sqlite:///{tmp_path / 'l.db'}", actor="log-default") as log:
        graph = build_graph(AsyncEventlogSaver(log, tenant_id=TENANT, actor="saver"))
        with log.acting_as("bob"):
            await graph.ainvoke({"items": []}, {"configurable": {"thread_id": "a"}})
            await graph.ainvoke({"items": []}, {"configurable": {
                "thread_id": "b", ACTOR_KEY: "carol"}})
        assert ({"bob"}, {"carol"}) == ({a for _, a in await actors(log, "thread:a")},
                                        {a for _, a in await actors(log, "thread:b")})


async def test_a_bad_configurable_actor_is_refused_naming_the_key(tmp_path: Path) -> None:
    """A ``configurable["actor"]`` with a line break is `InvalidInput` naming the key, and
    the thread gets nothing."""
    async with open_log(f"sqlite:///{tmp_path / 'l.db'}") as log:
        graph = build_graph(AsyncEventlogSaver(log, tenant_id=TENANT))
        with pytest.raises(InvalidInput, match=r'^configurable\["actor"\]: contains'):
            await graph.ainvoke({"items": []}, {"configurable": {
                "thread_id": "t1", ACTOR_KEY: "alice\nroot"}})
        assert [] == await actors(log, "thread:t1")


def test_the_sync_saver_records_the_configurable_actor(tmp_path: Path) -> None:
    """``graph.invoke`` on the sync saver (its log on a background loop) records
    ``configurable["actor"]`` too, and the saver's ``actor`` from ``from_conn_string``."""
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with EventlogSaver.from_conn_string(url, tenant_id=TENANT, actor="svc") as saver:
        graph = build_graph(saver)
        graph.invoke({"items": []}, {"configurable": {"thread_id": "t1"}})
        graph.invoke(Command(resume="ok"), {"configurable": {"thread_id": "t1",
                                                             ACTOR_KEY: "alice"}})

    async def read() -> list[str | None]:
        async with open_log(url) as log:
            return [a for _, a in await actors(log, "thread:t1")]

    seen = asyncio.run(read())
    assert ("svc", "alice") == (seen[0], seen[-1])
    assert set(seen) == {"svc", "alice"}


async def test_a_workflow_run_by_an_operator_records_them(tmp_path: Path) -> None:
    """An Agent Framework storage's ``actor`` is recorded on each save; a run inside
    `acting_as` records the block's principal instead, and so does a delete."""
    async with EventlogCheckpointStorage.from_url(
            f"sqlite:///{tmp_path / 'l.db'}", tenant_id=TENANT, actor="svc:payments") as storage:
        log = storage.log
        await build_workflow(storage, "first").run("order")
        with log.acting_as("alice"):
            await build_workflow(storage, "second").run("order")
            extra = checkpoint("second")
            await storage.save(extra)
            assert await storage.delete(extra.checkpoint_id)
        assert {"svc:payments"} == {a for _, a in await actors(log, "thread:first")}
        assert {"alice"} == {a for _, a in await actors(log, "thread:second")}
        assert "thread_checkpoints_removed" == (await actors(log, "thread:second"))[-1][0]
        assert (await log.verify()).ok


async def test_an_agent_framework_storage_refuses_a_bad_actor(tmp_path: Path) -> None:
    """A storage named with an empty actor is `InvalidInput` before any log is opened."""
    with pytest.raises(InvalidInput, match=r"^actor: "):
        async with EventlogCheckpointStorage.from_url(f"sqlite:///{tmp_path / 'l.db'}",
                                                      actor=""):
            pass  # pragma: no cover
    assert not (tmp_path / "l.db").exists()
