"""LangGraph's `DeltaChannel` on an encrypted log (issue 40 §6), in the sealed campaign.

A `DeltaChannel` stores its list only every ``snapshot_frequency``-th version and rebuilds
the rest from `aget_delta_channel_history`: the writes of the checkpoint's ancestors and
the nearest stored value (its seed). That read handed back the stored rows without opening
them, so on an encrypted log the list reloaded as ``[]`` (element storage on) or its sealed
bytes were decoded as if plain (element storage off; the next run crashed with
TypeError). These tests rebuild delta channels the ways LangGraph's own
``test_delta_channel_*`` files exercise them (a long thread, a resume, a subgraph's
namespace, ``update_state``, a fork from an old checkpoint, the sync saver), with element
storage on and off, on encrypted SQLite and PostgreSQL, beside LangGraph's InMemorySaver;
and a log opened without the keyring refuses the history read rather than answering [].
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver, EventlogSaver
from eventlog.errors import KeyringRequired
from tests.conftest import SEALED_POSTGRESQL, SEALED_SQLITE, BackendTarget
from tests.conftest import target as any_target

pytestmark = pytest.mark.sealed

SNAPSHOTS = 4
"""The channels' ``snapshot_frequency``: short, so every test crosses several seeds."""
MARKER = "MARKER-DELTA"


@pytest.fixture(params=[SEALED_SQLITE, SEALED_POSTGRESQL])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """Encrypted SQLite and PostgreSQL."""
    yield from any_target.__wrapped__(request, tmp_path)  # type: ignore[attr-defined]


@pytest.fixture(params=[True, False], ids=["elements", "whole"])
def elements(request: pytest.FixtureRequest) -> bool:
    """Lists stored element by element (the default), or each value whole."""
    return bool(request.param)


def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    return [*state, *(item for write in writes for item in write)]


class State(TypedDict, total=False):
    messages: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=SNAPSHOTS)]
    step: int


def talk(state: State) -> dict[str, Any]:
    step = state.get("step", 0) + 1
    return {"messages": [f"{MARKER} {step}"], "step": step}


def build(saver: BaseCheckpointSaver[Any] | None, until: int
          ) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(State)
    graph.add_node("talk", talk)
    graph.add_edge(START, "talk")
    graph.add_conditional_edges("talk", lambda s: END if s["step"] >= until else "talk")
    return graph.compile(checkpointer=saver)


def with_subgraph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A parent whose child subgraph (compiled without a checkpointer: the parent's is
    handed down) writes its delta channel over three supersteps."""
    child = StateGraph(State)
    for name, then in (("one", "two"), ("two", "three"), ("three", END)):
        child.add_node(name, lambda s, name=name: {"messages": [f"{MARKER} {name}"]})
        child.add_edge(name, then)
    child.add_edge(START, "one")
    parent = StateGraph(State)
    parent.add_node("child", child.compile())
    parent.add_node("finish", lambda s: {"step": 1})
    parent.add_edge(START, "child")
    parent.add_edge("child", "finish")
    parent.add_edge("finish", END)
    return parent.compile(checkpointer=saver)


def thread(thread_id: str, **more: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, **more}, "recursion_limit": 200}


@asynccontextmanager
async def ours(target: BackendTarget, elements: bool) -> AsyncIterator[AsyncEventlogSaver]:
    async with open_log(target.url, **target.options()) as log:
        yield AsyncEventlogSaver(log, tenant_id="acme", elements=elements)


async def every_state(graph: CompiledStateGraph[Any, Any, Any, Any],
                      config: RunnableConfig) -> list[Any]:
    return [(s.values, s.next) async for s in graph.aget_state_history(config)]


async def histories(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> list[Any]:
    """The delta history at every checkpoint of the thread (values only: ids differ)."""
    found = []
    async for item in saver.alist(config):
        history = await saver.aget_delta_channel_history(config=item.config,
                                                         channels=["messages", "step"])
        found.append({name: ([value for _, _, value in entry["writes"]], entry.get("seed"))
                      for name, entry in history.items()})
    return found


async def test_a_delta_thread_reads_back_and_resumes(target: BackendTarget,
                                                     elements: bool) -> None:
    """Twenty steps, then a second run on the same thread: the state, every checkpoint's
    state and the history at every checkpoint equal InMemorySaver's; nothing is []."""
    theirs = InMemorySaver()
    async with ours(target, elements) as saver:
        for each in (theirs, saver):
            await build(each, 20).ainvoke({"messages": ["hello"], "step": 0}, thread("t"))
            await build(each, 30).ainvoke({"messages": ["again"]}, thread("t"))
        state = await build(saver, 30).aget_state(thread("t"))
        assert (await build(theirs, 30).aget_state(thread("t"))).values == state.values
        assert 32 == len(state.values["messages"])
        assert await every_state(build(theirs, 30), thread("t")) == await every_state(
            build(saver, 30), thread("t"))
        assert await histories(theirs, thread("t")) == await histories(saver, thread("t"))


async def test_a_subgraphs_delta_channel_reads_back(target: BackendTarget,
                                                    elements: bool) -> None:
    """The child's namespace (found as a client finds it, in the parent's tasks) reads its
    delta channel whole through its history, and the parent's state reads back, both as
    on InMemorySaver."""

    async def read(saver: BaseCheckpointSaver[Any]) -> tuple[Any, Any]:
        graph = with_subgraph(saver)
        await graph.ainvoke({"messages": ["start"]}, thread("p"))
        namespaces = {task.state["configurable"]["checkpoint_ns"]
                      async for snapshot in graph.aget_state_history(thread("p"))
                      for task in snapshot.tasks
                      if task.name == "child" and isinstance(task.state, dict)}
        (namespace,) = namespaces
        child = thread("p", checkpoint_ns=namespace)
        longest = max([s.values.get("messages") or []
                       async for s in graph.aget_state_history(child)], key=len)
        return longest, (await graph.aget_state(thread("p"))).values

    async with ours(target, elements) as saver:
        mine = await read(saver)
    expected = await read(InMemorySaver())
    assert (expected, 4) == (mine, len(mine[0]))


async def test_update_state_and_a_fork_rebuild_the_channel(target: BackendTarget,
                                                           elements: bool) -> None:
    """`aupdate_state` adds to the channel; a run forked from an old checkpoint rebuilds
    the channel as it stood there: both as InMemorySaver has them."""
    theirs = InMemorySaver()
    found = []
    async with ours(target, elements) as saver:
        for each in (theirs, saver):
            graph = build(each, 9)
            await graph.ainvoke({"messages": ["hello"], "step": 0}, thread("u"))
            await graph.aupdate_state(thread("u"), {"messages": ["edited"]})
            edited = (await graph.aget_state(thread("u"))).values
            old = [s async for s in graph.aget_state_history(thread("u"))][6]
            forked = await build(each, 12).ainvoke(None, old.config)
            found.append((edited, forked, (await graph.aget_state(thread("u"))).values))
    assert found[0] == found[1]
    assert "edited" == found[1][0]["messages"][-1]


async def test_without_the_keyring_the_history_is_refused_not_empty(
        target: BackendTarget) -> None:
    """The same log opened without its keyring refuses the history read
    (`KeyringRequired`) instead of answering an empty channel."""
    async with ours(target, True) as saver:
        await build(saver, 6).ainvoke({"messages": ["hello"], "step": 0}, thread("k"))
        latest = await saver.aget_tuple(thread("k"))
    assert latest is not None
    options = {name: value for name, value in target.options().items() if name != "keyring"}
    async with open_log(target.url, **options) as log:
        with pytest.raises(KeyringRequired):
            await AsyncEventlogSaver(log, tenant_id="acme").aget_delta_channel_history(
                config=latest.config, channels=["messages"])


def test_the_sync_saver_rebuilds_the_channel_on_an_encrypted_log(tmp_path: Path) -> None:
    """`graph.get_state` on `EventlogSaver` over encrypted SQLite equals InMemorySaver's,
    and no message is stored in the clear."""
    from eventlog.crypto import init_keyring

    keyring = init_keyring(tmp_path / "keyring.json")
    theirs = InMemorySaver()
    build(theirs, 12).invoke({"messages": ["hello"], "step": 0}, thread("s"))
    with EventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'log.db'}",
                                        keyring=keyring) as saver:
        build(saver, 12).invoke({"messages": ["hello"], "step": 0}, thread("s"))
        mine = build(saver, 12).get_state(thread("s")).values
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("log.db*"))
    assert (build(theirs, 12).get_state(thread("s")).values, False) == (
        mine, MARKER.encode() in stored)


async def _swap_write_blobs(target: BackendTarget, tmp_path: Path) -> None:
    """The DBA's edit: two pending writes' sealed blobs exchanged in the blobs table
    (both of one thread, so each envelope opens under the same key)."""
    pick = ("SELECT digest FROM {writes} WHERE channel = 'messages' "
            "ORDER BY checkpoint_id DESC LIMIT 2")
    swap = ("UPDATE {blobs} SET data = CASE WHEN digest = {a} THEN (SELECT data FROM "
            "{blobs} WHERE digest = {b}) ELSE (SELECT data FROM {blobs} WHERE digest = {a}) "
            "END WHERE digest IN ({a}, {b})")
    if target.name == "sqlite":
        import sqlite3

        with sqlite3.connect(tmp_path / "log.db") as connection:
            a, b = [row[0] for row in connection.execute(
                pick.format(writes="thread_writes"))]
            connection.execute(swap.format(blobs="blobs", a=":a", b=":b"),
                               {"a": a, "b": b})
        return
    import asyncpg

    from tests.conftest import PG_URL

    connection = await asyncpg.connect(PG_URL)
    try:
        writes, blobs = (f'"{target.schema}".thread_writes', f'"{target.schema}".blobs')
        a, b = [row[0] for row in await connection.fetch(pick.format(writes=writes))]
        await connection.execute(swap.format(blobs=blobs, a="$1", b="$2"), a, b)
    finally:
        await connection.close()


async def test_a_write_blob_swapped_by_the_dba_is_refused(target: BackendTarget,
                                                          tmp_path: Path) -> None:
    """Two writes' sealed blobs exchanged in the table (each a valid envelope of the
    thread): the history read refuses (`CorruptBlob`), it does not serve the other's."""
    from eventlog.errors import CorruptBlob

    async with ours(target, False) as saver:
        await build(saver, 6).ainvoke({"messages": ["hello"], "step": 0}, thread("w"))
        latest = await saver.aget_tuple(thread("w"))
        assert latest is not None
        await _swap_write_blobs(target, tmp_path)
        with pytest.raises(CorruptBlob):
            await saver.aget_delta_channel_history(config=latest.config,
                                                   channels=["messages"])
