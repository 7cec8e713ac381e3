"""LangGraph's beta `DeltaChannel` on our saver (issue 33 §3).

A real `StateGraph` whose ``messages`` live in a `DeltaChannel` (only every
``snapshot_frequency``-th version stores the list; the rest are rebuilt by replaying
ancestors' writes through `BaseCheckpointSaver.aget_delta_channel_history`) runs 150
steps on our saver and on LangGraph's `InMemorySaver`: the state, the history call and
every checkpoint's state read back the same. The history is one statement on SQL
backends however deep the walk, so `aget_state` costs the same round trips at step 150
as at step 10 (counted at the driver).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import sqlalchemy as sa
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.face import OpenLog
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import SqliteBackend
from tests.conftest import (
    BACKENDS,
    CITUS,
    SEALED_POSTGRESQL,
    SEALED_SQLITE,
    BackendTarget,
    postgres_target,
)
from tests.conftest import target as any_target

STEPS = 150
SNAPSHOTS = 40
"""The channel's ``snapshot_frequency``: 150 steps hold three snapshots and a tail."""


@pytest.fixture(params=[*BACKENDS, CITUS, SEALED_SQLITE, SEALED_POSTGRESQL])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """Every backend, the distributed log under ``-m citus``, and encrypted SQLite and
    PostgreSQL under ``-m sealed`` (issue 40 §6: the history read opens what it reads)."""
    yield from any_target.__wrapped__(request, tmp_path)  # type: ignore[attr-defined]


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendTarget]:
    """The SQL backends that count their driver's statements here."""
    if request.param == "sqlite":
        yield BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")
    else:
        yield from postgres_target(request)


def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    """The batching-invariant reducer `DeltaChannel` asks for."""
    return [*state, *(item for write in writes for item in write)]


class State(TypedDict):
    messages: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=SNAPSHOTS)]
    step: int


def talk(state: State) -> dict[str, Any]:
    step = state["step"] + 1
    return {"messages": [f"message {step} " + "x" * 100], "step": step}


def build(saver: BaseCheckpointSaver[Any], until: int) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(State)
    graph.add_node("talk", talk)
    graph.add_edge(START, "talk")
    graph.add_conditional_edges("talk", lambda state: END if state["step"] >= until else "talk")
    return graph.compile(checkpointer=saver)


def thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 10 * STEPS}


async def run(saver: BaseCheckpointSaver[Any], thread_id: str, until: int = STEPS) -> None:
    await build(saver, until).ainvoke({"messages": ["hello"], "step": 0}, thread(thread_id))


async def every_state(saver: BaseCheckpointSaver[Any], thread_id: str,
                      until: int = STEPS) -> list[tuple[Any, ...]]:
    """Every checkpoint's values, next nodes and step, newest first."""
    return [(s.values, s.next, s.metadata.get("step") if s.metadata else None)
            async for s in build(saver, until).aget_state_history(thread(thread_id))]


async def histories(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[Any]:
    """`aget_delta_channel_history` at every checkpoint (values only: ids differ)."""
    found = []
    async for item in saver.alist(thread(thread_id)):
        history = await saver.aget_delta_channel_history(config=item.config,
                                                         channels=["messages", "step"])
        found.append({name: ([value for _, _, value in entry["writes"]], entry.get("seed"))
                      for name, entry in history.items()})
    return found


@asynccontextmanager
async def ours(target: BackendTarget) -> AsyncIterator[tuple[OpenLog, AsyncEventlogSaver]]:
    async with open_log(target.url, **target.options()) as log:
        yield log, AsyncEventlogSaver(log, tenant_id="acme")


async def test_a_delta_thread_reads_back_as_langgraphs_saver_reads_it(
    target: BackendTarget,
) -> None:
    """150 steps: the state at the end, every checkpoint's state and the delta history
    at every checkpoint equal what LangGraph's InMemorySaver gives for the same graph."""
    theirs = InMemorySaver()
    await run(theirs, "t")
    async with ours(target) as (_, saver):
        await run(saver, "t")
        state = await build(saver, STEPS).aget_state(thread("t"))
        expected = await build(theirs, STEPS).aget_state(thread("t"))
        assert expected.values == state.values
        assert STEPS + 1 == len(state.values["messages"])
        assert await every_state(theirs, "t") == await every_state(saver, "t")
        assert await histories(theirs, "t") == await histories(saver, "t")


async def test_a_delta_thread_resumes_where_it_stopped(target: BackendTarget) -> None:
    """A second invocation rebuilds the channel from the history and carries on."""
    theirs = InMemorySaver()
    async with ours(target) as (_, saver):
        for each in (theirs, saver):
            await run(each, "t", until=70)
            await build(each, 130).ainvoke(None, thread("t"))
            await build(each, 130).ainvoke({"messages": ["again"], "step": 130},
                                           thread("t"))
        mine = await build(saver, 131).aget_state(thread("t"))
        expected = await build(theirs, 131).aget_state(thread("t"))
        assert expected.values == mine.values


async def test_history_is_tenant_scoped_and_empty_for_what_is_not_there(
    target: BackendTarget,
) -> None:
    """Another tenant's saver finds no history of the thread; an absent checkpoint or
    thread has writes [] and no seed, like LangGraph's default walk."""
    async with ours(target) as (log, saver):
        await run(saver, "t", until=20)
        latest = await saver.aget_tuple(thread("t"))
        assert latest is not None
        mine = await saver.aget_delta_channel_history(config=latest.config,
                                                      channels=["messages"])
        assert 21 == len(mine["messages"]["writes"])  # the input and 20 steps
        stranger = AsyncEventlogSaver(log, tenant_id="other")
        assert {"messages": {"writes": []}} == await stranger.aget_delta_channel_history(
            config=latest.config, channels=["messages"])
        absent = {**latest.config["configurable"], "checkpoint_id": "nope"}
        assert {"messages": {"writes": []}} == await saver.aget_delta_channel_history(
            config={"configurable": absent}, channels=["messages"])
        assert {"messages": {"writes": []}} == await saver.aget_delta_channel_history(
            config=thread("absent"), channels=["messages"])
        assert {} == await saver.aget_delta_channel_history(config=latest.config, channels=[])


# -- round trips ------------------------------------------------------------------------


def count_statements(log: OpenLog) -> Callable[[], list[str]]:
    """Start counting the statements the backend sends its driver; returns what reads
    the count so far. PostgreSQL: asyncpg's calls; SQLite: SQLAlchemy's cursor runs."""
    storage = log.storage
    seen: list[str] = []
    if isinstance(storage, PostgresBackend):
        import asyncpg.connection

        cls: Any = asyncpg.connection.Connection
        for name in ("fetch", "fetchrow", "fetchval", "execute", "executemany"):
            real = getattr(cls, name)

            def counting(self: Any, query: str, *args: Any, _real: Any = real,
                         **kwargs: Any) -> Any:
                seen.append(query)
                return _real(self, query, *args, **kwargs)

            setattr(cls, f"_counted_{name}", real)
            setattr(cls, name, counting)
    else:
        assert isinstance(storage, SqliteBackend)
        sa.event.listen(storage.engine.sync_engine, "before_cursor_execute",
                        lambda _c, _cur, statement, *_: seen.append(statement))
    return lambda: list(seen)


def stop_counting() -> None:
    import asyncpg.connection

    cls: Any = asyncpg.connection.Connection
    for name in ("fetch", "fetchrow", "fetchval", "execute", "executemany"):
        real = cls.__dict__.get(f"_counted_{name}")
        if real is not None:
            setattr(cls, name, real)
            delattr(cls, f"_counted_{name}")


@pytest.fixture
def counting() -> Any:
    yield count_statements
    stop_counting()


def _reads(statements: list[str]) -> list[str]:
    return [sql for sql in statements if sql.split()[0].upper() not in ("BEGIN", "ROLLBACK")]


async def test_history_is_one_statement_at_any_depth(
    sql_target: BackendTarget, counting: Any
) -> None:
    """The history call is two statements at step 10 and at step 150, and `aget_state`
    sends the same number of statements at both depths (3 on PostgreSQL: the checkpoint,
    the history, and the elements of the list-valued writes, `eventlog.checkpoints.elements`)."""
    async with ours(sql_target) as (log, saver):
        await run(saver, "short", until=10)
        await run(saver, "long", until=STEPS)
        count = counting(log)
        costs = {}
        for name, steps in (("short", 10), ("long", STEPS)):
            graph = build(saver, steps)
            latest = await saver.aget_tuple(thread(name))
            assert latest is not None
            before = len(count())
            await saver.aget_delta_channel_history(config=latest.config,
                                                   channels=["messages"])
            history = _reads(count()[before:])
            before = len(count())
            state = await graph.aget_state(thread(name))
            costs[name] = (len(history), len(_reads(count()[before:])))
            assert steps + 1 == len(state.values["messages"])
        print(f"\n{sql_target.name}: (history, aget_state) statements at step 10 and "
              f"{STEPS}: {costs}")
        assert costs["short"] == costs["long"]
        if isinstance(log.storage, PostgresBackend):
            assert 2 == costs["long"][0]  # the history, then its list-valued writes' elements
            assert 3 == costs["long"][1]
        else:
            assert 1 == costs["long"][0]  # SQLite's reader: one job


async def test_aget_state_at_step_150_beside_langgraphs_postgres_saver(
    pg_schema: str, counting: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prints statements and the median time of `aget_state` at step 150 of a delta
    thread on our PostgreSQL saver and LangGraph's (`AsyncPostgresSaver`, its own schema),
    measured in one run; ours sends at most 3 (the
    third: the elements of its list-valued writes)."""
    import psycopg

    from tests.adapters.langgraph_stores import fresh_schema, postgres_saver
    from tests.conftest import PG_URL, drop_schema

    theirs_schema = fresh_schema()
    executed: list[str] = []
    real = psycopg.AsyncCursor.execute

    async def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        executed.append(str(query))
        return await real(self, query, *args, **kwargs)

    try:
        async with postgres_saver(theirs_schema) as theirs, \
                open_log(PG_URL, schema=pg_schema) as log:
            saver = AsyncEventlogSaver(log, tenant_id="acme")
            for each in (theirs, saver):
                await run(each, "t")
            count = counting(log)
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
            times: dict[str, list[float]] = {"ours": [], "langgraph": []}
            graphs = {"ours": build(saver, STEPS), "langgraph": build(theirs, STEPS)}
            for _ in range(9):
                for name, graph in graphs.items():
                    started = time.perf_counter()
                    await graph.aget_state(thread("t"))
                    times[name].append(time.perf_counter() - started)
            default = {"ours": 0.0}  # the walk BaseCheckpointSaver gives: a read a parent
            latest = await saver.aget_tuple(thread("t"))
            assert latest is not None
            before = len(count())
            started = time.perf_counter()
            walked = await BaseCheckpointSaver.aget_delta_channel_history(
                saver, config=latest.config, channels=["messages"])
            default["ours"] = time.perf_counter() - started
            default_trips = len(count()[before:])
            mine = await saver.aget_delta_channel_history(config=latest.config,
                                                          channels=["messages"])
            assert walked == mine
            before, theirs_before = len(count()), len(executed)
            state = await build(saver, STEPS).aget_state(thread("t"))
            await build(theirs, STEPS).aget_state(thread("t"))
            trips, theirs_trips = len(count()[before:]), len(executed) - theirs_before
    finally:
        await drop_schema(theirs_schema)
    median = {name: sorted(found)[len(found) // 2] for name, found in times.items()}
    print(f"\naget_state at step {STEPS} (DeltaChannel, snapshot every {SNAPSHOTS}): ours "
          f"{trips} statements, {median['ours'] * 1000:.2f} ms; LangGraph's PostgreSQL "
          f"saver {theirs_trips} statements, {median['langgraph'] * 1000:.2f} ms; "
          f"ours/theirs {median['ours'] / median['langgraph']:.2f}; the default walk's "
          f"history call alone on ours: {default_trips} statements, "
          f"{default['ours'] * 1000:.2f} ms")
    assert STEPS + 1 == len(state.values["messages"])
    assert trips <= 3  # the third reads the list-valued writes' elements


def test_the_sync_saver_rebuilds_a_delta_channel(tmp_path: Path) -> None:
    """`graph.get_state` on `EventlogSaver` (the sync history) equals InMemorySaver's."""
    from eventlog.adapters.langgraph import EventlogSaver

    theirs = InMemorySaver()
    build(theirs, 60).invoke({"messages": ["hello"], "step": 0}, thread("t"))
    with EventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'log.db'}") as saver:
        build(saver, 60).invoke({"messages": ["hello"], "step": 0}, thread("t"))
        assert build(theirs, 60).get_state(thread("t")).values == build(
            saver, 60).get_state(thread("t")).values
