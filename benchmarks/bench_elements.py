"""Bytes of a chat agent's thread (issue 33 §1): element storage beside LangGraph's savers.

The workload of the storage study (``research/storage-growth.md``): a real LangGraph
`StateGraph` with ``messages`` under ``add_messages`` plus ``step_count`` and ``status``;
one node loops, appending a 2,000-character AI message each super-step and, every 5th
step, a tool call followed by a 20,000-character tool message (text drawn from English
words, so it compresses like prose); one thread, four ``ainvoke`` turns of 50 steps (208
checkpoints, 244 messages). After each turn the thread's bytes are measured:

- PostgreSQL: ``pg_total_relation_size`` of every table of the saver's own schema (heap,
  TOAST and indexes), after ``VACUUM`` (dead tuples left by updates count until reused);
- SQLite: the database file after ``PRAGMA wal_checkpoint(TRUNCATE)``.

Contestants, each on its own schema or file: LangGraph's ``AsyncPostgresSaver`` and
``AsyncSqliteSaver``; ours with element storage (the default) and ours with
``elements=False`` (every value whole, as before), and ours with element storage on an
encrypted log (``keyring=``: every element and manifest sealed, issue 32), whose bytes
are given as a ratio to the plain log's. Then the median time of
``aget_tuple`` of the thread's latest checkpoint (the whole 1.27 MB state), ours ÷
LangGraph's and elements ÷ whole. Caveats: one thread, one machine shared with other
work; sizes are exact, times are noisy. Run: ``python -m benchmarks --only elements``.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import asyncpg
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from benchmarks.common import PG_URL, Results, quick, scratch_schema, section

TURNS = 4
WORDS = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "they", "you", "were", "her", "she", "there", "had", "been", "one", "all", "we", "can",
    "their", "has", "more", "when", "will", "would", "who", "so", "no", "if", "out", "up",
    "what", "about", "into", "than", "them", "time", "could", "only", "new", "some", "these",
    "two", "may", "first", "then", "do", "any", "like", "my", "now", "over", "such", "our",
    "man", "me", "even", "most", "made", "after", "also", "did", "many", "before", "must",
    "through", "back", "years", "where", "much", "your", "way", "well", "down", "should",
    "because", "each", "just", "those", "people", "how", "too", "little", "state", "good",
    "very", "make", "world", "still", "own", "see", "men", "work", "long", "get", "here",
    "between", "both", "life", "being", "under", "never", "day", "same", "another", "know",
    "while", "last", "might", "us", "great", "old", "year", "off", "come", "since", "against",
    "go", "came", "right", "used", "take", "three",
)


def steps_per_turn() -> int:
    return 5 if quick() else 50


def prose(size: int, rng: random.Random) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    step_count: int
    status: str


def build(saver: Any) -> Any:
    rng = random.Random(33)

    def agent(state: State) -> dict[str, Any]:
        step = state["step_count"] + 1
        if step % 5:
            added: list[Any] = [AIMessage(prose(2_000, rng), id=f"ai-{step}")]
        else:
            call = f"call-{step}"
            added = [AIMessage(prose(2_000, rng), id=f"ai-{step}", tool_calls=[
                {"name": "lookup", "args": {"step": step}, "id": call}]),
                ToolMessage(prose(20_000, rng), tool_call_id=call, id=f"tool-{step}")]
        return {"messages": added, "step_count": step, "status": f"step {step}"}

    def route(state: State) -> str:
        return END if state["step_count"] % steps_per_turn() == 0 else "agent"

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route)
    return graph.compile(checkpointer=saver)


READS: dict[str, list[float]] = {}
"""The last backend's read times, each read, by saver."""
EMPTY: dict[int, int] = {}
"""Each saver's store before the thread (its empty tables and indexes), by saver."""
CONFIG = {"configurable": {"thread_id": "chat"}, "recursion_limit": 1_000}


async def grow(saver: Any, measure: Callable[[], Any]) -> list[int]:
    """Bytes after each turn of the chat thread on ``saver``."""
    graph = build(saver)
    EMPTY[id(saver)] = await measure()
    sizes = []
    for turn in range(TURNS):
        start = {"messages": [HumanMessage(f"turn {turn}", id=f"human-{turn}")],
                 "status": "asked"}
        if turn == 0:
            start["step_count"] = 0
        await graph.ainvoke(start, CONFIG)
        sizes.append(await measure())
    return sizes


async def read_time(saver: Any, reads: int) -> float:
    """Median seconds of ``aget_tuple`` of the thread's latest checkpoint."""
    times = []
    for _ in range(reads):
        started = time.perf_counter()
        found = await saver.aget_tuple({"configurable": {"thread_id": "chat"}})
        times.append(time.perf_counter() - started)
        assert found is not None
    return statistics.median(times)


async def _pg_size(schema: str) -> int:
    connection = await asyncpg.connect(PG_URL)
    try:
        tables = await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
        for row in tables:
            await connection.execute(f'VACUUM "{schema}"."{row["tablename"]}"')
        return int(await connection.fetchval(
            "SELECT coalesce(sum(pg_total_relation_size(format('%I.%I', schemaname, "
            "tablename))), 0) FROM pg_tables WHERE schemaname = $1", schema))
    finally:
        await connection.close()


def _sqlite_size(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


@asynccontextmanager
async def _theirs_pg(schema: str) -> AsyncIterator[Any]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    connection = await asyncpg.connect(PG_URL)
    await connection.execute(f'CREATE SCHEMA "{schema}"')
    await connection.close()
    url = PG_URL + f"?options=-csearch_path%3D{schema}"
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        yield saver


async def _contest(results: Results, name: str, sizes: dict[str, list[int]],
                   reads: dict[str, float], empty: dict[str, int]) -> None:
    steps = [steps_per_turn() * (turn + 1) for turn in range(TURNS)]
    theirs = sizes["langgraph"]
    print(f"  {'saver':<28}" + "".join(f"{n:>11} steps" for n in steps))
    for label, found in sizes.items():
        print(f"  {label:<28}" + "".join(f"{size / 1e6:>14.2f} MB" for size in found))
    for label in ("ours, elements", "ours, whole", SEALED):
        ratios = "  ".join(f"{their / mine:.1f}×" for their, mine in zip(theirs, sizes[label],
                                                                     strict=True))
        print(f"  LangGraph ÷ {label}: {ratios}")
    print("  empty store before the thread: " + ", ".join(
        f"{label} {size / 1e6:.2f} MB" for label, size in empty.items()))
    print(f"  {SEALED} ÷ ours, elements (bytes): " + "  ".join(
        f"{sealed / plain:.2f}×" for sealed, plain in zip(sizes[SEALED], sizes["ours, elements"],
                                                          strict=True)))
    grown = {label: sizes[label][-1] - empty[label] for label in sizes}
    print(f"  growth at {steps[-1]} steps, LangGraph ÷ ours (elements): "
          f"{grown['langgraph'] / grown['ours, elements']:.1f}×")
    print("  aget_tuple of the latest checkpoint (median): " + ", ".join(
        f"{label} {seconds * 1000:.2f} ms" for label, seconds in reads.items()))
    print(f"  read time ours (elements) ÷ LangGraph's: "
          f"{reads['ours, elements'] / reads['langgraph']:.2f}; elements ÷ whole: "
          f"{reads['ours, elements'] / reads['ours, whole']:.2f}")
    results.compare(f"elements: {name} thread bytes at {steps[-1]} steps", "langgraph",
                    "ours, elements",
                    # Sizes are exact (they repeat to the kilobyte): one measurement,
                    # given as the three rounds the results table expects of a ratio.
                    {"langgraph": [float(theirs[-1])] * 3,
                     "ours, elements": [float(sizes["ours, elements"][-1])] * 3},
                    unit="bytes", goal="LangGraph's ÷ ours ≥ 15", at_least=15.0)
    results.compare(f"elements: {name} encrypted thread bytes at {steps[-1]} steps",
                    "langgraph", SEALED,
                    {"langgraph": [float(theirs[-1])] * 3,
                     SEALED: [float(sizes[SEALED][-1])] * 3},
                    unit="bytes", goal="LangGraph's ÷ ours ≥ 15", at_least=15.0)
    results.compare(f"elements: {name} aget_tuple time, whole ÷ elements", "ours, whole",
                    "ours, elements",
                    {"ours, whole": READS["ours, whole"],
                     "ours, elements": READS["ours, elements"]},
                    unit="s", goal="≥ 1 (reads at least as fast)", at_least=1.0)


SEALED = "ours, sealed elements"
"""Element storage on an encrypted log (a keyring made for the run)."""


def _keyring(directory: Path) -> Any:
    from eventlog.crypto import init_keyring

    return init_keyring(directory / "keyring.json")


async def interleaved_reads(savers: dict[str, Any], reads: int) -> dict[str, float]:
    """Median ``aget_tuple`` seconds per saver, the savers taking turns read by read (the
    machine's load lands on each alike)."""
    times: dict[str, list[float]] = {label: [] for label in savers}
    for _ in range(reads):
        for label, saver in savers.items():
            times[label].append(await read_time(saver, 1))
    READS.update(times)
    return {label: statistics.median(found) for label, found in times.items()}


async def _postgres(results: Results, reads: int) -> None:
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    section("elements: bytes of a chat thread on PostgreSQL (issue 33 §1)")
    sizes: dict[str, list[int]] = {}
    empty: dict[str, int] = {}
    savers: dict[str, Any] = {}
    async with scratch_schema() as schema, AsyncExitStack() as stack:
        keyring = _keyring(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        theirs_schema = f"{schema}_langgraph"
        theirs = await stack.enter_async_context(_theirs_pg(theirs_schema))
        sizes["langgraph"] = await grow(theirs, lambda: _pg_size(theirs_schema))
        empty["langgraph"], savers["langgraph"] = EMPTY[id(theirs)], theirs
        for label, elements, suffix in (("ours, elements", True, ""),
                                        ("ours, whole", False, "_whole"),
                                        (SEALED, True, "_sealed")):
            sealed = {"keyring": keyring} if suffix == "_sealed" else {}
            saver = await stack.enter_async_context(AsyncEventlogSaver.from_conn_string(
                PG_URL, tenant_id="bench", schema=schema + suffix, elements=elements,
                **sealed))
            sizes[label] = await grow(saver, lambda s=schema + suffix: _pg_size(s))
            empty[label], savers[label] = EMPTY[id(saver)], saver
        times = await interleaved_reads(savers, reads)
    connection = await asyncpg.connect(PG_URL)
    for suffix in ("_whole", "_sealed"):
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}{suffix}" CASCADE')
    await connection.close()
    await _contest(results, "PostgreSQL", sizes, times, empty)


async def _sqlite(results: Results, reads: int) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from eventlog.adapters.langgraph import AsyncEventlogSaver

    section("elements: bytes of a chat thread on SQLite (issue 33 §1)")
    sizes: dict[str, list[int]] = {}
    empty: dict[str, int] = {}
    savers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="eventlog-elements-") as directory:
        root = Path(directory)
        async with AsyncExitStack() as stack:
            theirs = await stack.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(root / "theirs.db")))
            await theirs.setup()
            sizes["langgraph"] = await grow(theirs, lambda: _async(_sqlite_size,
                                                                   root / "theirs.db"))
            empty["langgraph"], savers["langgraph"] = EMPTY[id(theirs)], theirs
            keyring = _keyring(root)
            for label, elements in (("ours, elements", True), ("ours, whole", False),
                                    (SEALED, True)):
                path = root / f"ours-{label.replace(', ', '-').replace(' ', '-')}.db"
                sealed = {"keyring": keyring} if label == SEALED else {}
                saver = await stack.enter_async_context(AsyncEventlogSaver.from_conn_string(
                    f"sqlite:///{path}", tenant_id="bench", elements=elements, **sealed))
                sizes[label] = await grow(saver, lambda p=path: _async(_sqlite_size, p))
                empty[label], savers[label] = EMPTY[id(saver)], saver
            times = await interleaved_reads(savers, reads)
    await _contest(results, "SQLite", sizes, times, empty)


async def _async(function: Callable[[Path], int], path: Path) -> int:
    return function(path)


async def run(results: Results) -> None:
    reads = 5 if quick() else 30
    await _postgres(results, reads)
    await _sqlite(results, reads)
