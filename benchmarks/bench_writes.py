"""The write rows of issue 30 §4: each of our writes beside LangGraph's ``aput``, on
PostgreSQL and on SQLite, in one run.

Cases (ours ÷ LangGraph's, per call, medians of the interleaved rounds, the range being
the per-round ratios):

- PostgreSQL `CheckpointStore.create` ÷ ``AsyncPostgresSaver.aput``;
- PostgreSQL adapter ``aput`` (`AsyncEventlogSaver`) ÷ ``AsyncPostgresSaver.aput``;
- SQLite `CheckpointStore.create` ÷ ``AsyncSqliteSaver.aput``;
- SQLite adapter ``aput`` ÷ ``AsyncSqliteSaver.aput``.

Every contestant writes what a one-node chat graph writes (`benchmarks.bench_writecost`:
``messages`` ~2 KB of prose-like text, each thread its own, and ``step``; a new thread,
or session, every 100 calls). A create names the session's previous checkpoint as its
parent, as a graph's step names the one before it (issue 30 §3: that check was a round
trip of its own). Figures per call:

- **calls/s** (the ratio's goal: ≥ 1.0);
- **client CPU µs**: `time.process_time` of this process around the calls (every thread:
  our SQLite writer's, aiosqlite's, the drivers'; goal ≤ LangGraph's);
- **PostgreSQL server CPU µs**: the time on a CPU of every process of the cluster
  (``/proc``: CPU time), which only this benchmark uses (goal for ``aput``: 1.5 times);
- **PostgreSQL WAL bytes**: the WAL insert position before and after (goal for ``aput``
  at most 1.5 times);
- **round trips**: calls on asyncpg's connections (each one round trip; LangGraph's
  psycopg pipelines its statements, so for it the count is statements), and SQLite
  statements (the trace callback of every connection: BEGIN and COMMIT included),
  counted in a pass of their own before the timed rounds, on instances of their own.

PostgreSQL runs on the private throwaway cluster of `benchmarks.walcluster` (fsync on,
autovacuum off; or ``EVENTLOG_BENCH_WAL_PG``, where server CPU is read only if its data
directory is readable here). SQLite runs in WAL with ``synchronous = FULL``, both savers'
default. Contestants take turns every `BLOCK` calls within a round (the disk's flush time
swings within seconds here).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks.bench_writecost import STATE, THREAD, _putter
from benchmarks.common import Results, rounds, section, size
from benchmarks.walcluster import private_cluster
from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver

Operation = Callable[[int], Awaitable[object]]
BLOCK = 50
"""Calls a contestant makes in one turn of a round."""
COUNTED = size(40, 5)
"""Calls of each contestant in the counting pass."""
_ASYNCPG_CALLS = ("fetch", "fetchval", "fetchrow", "execute", "executemany")
_PSYCOPG_CALLS = ("execute", "executemany")
CASES = (  # (backend, ours, theirs, server goals apply)
    ("PostgreSQL", "create", "langgraph_aput", False),
    ("PostgreSQL", "aput", "langgraph_aput", True),
    ("SQLite", "create", "langgraph_aput", False),
    ("SQLite", "aput", "langgraph_aput", False),
)


def creator(log: OpenLog, prefix: str) -> Operation:
    """`CheckpointStore.create` of one chat step per call, each naming the previous
    checkpoint of its session as its parent; a new session every `THREAD` calls."""
    run_id = uuid.uuid4()
    parents: dict[str, str] = {}

    async def create(i: int) -> None:
        session = f"{prefix}{i // THREAD}"
        written = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=session, run_id=run_id, step=i,
            parent_id=parents.get(session), state={**STATE, "step": i}))
        parents.clear()
        parents[session] = str(written.checkpoint_id)
    return create


class ServerCpu:
    """User + system CPU seconds of every process of one PostgreSQL cluster (its
    postmaster and children), read from ``/proc``; None where it cannot be read."""

    def __init__(self, postmaster: int | None) -> None:
        self.postmaster = postmaster

    @classmethod
    async def of(cls, connection: asyncpg.Connection) -> ServerCpu:
        try:
            directory = await connection.fetchval("SHOW data_directory")
            pid = int((Path(directory) / "postmaster.pid").read_text().split()[0])
            return cls(pid)
        except (OSError, ValueError, asyncpg.PostgresError):
            return cls(None)

    def processes(self) -> list[int]:
        """The ids of the postmaster and its children now (empty where unreadable)."""
        if self.postmaster is None:
            return []
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(entry.name) == self.postmaster or int(fields[1]) == self.postmaster:
                found.append(int(entry.name))
        return found

    def seconds(self, processes: list[int] | None = None) -> float | None:
        """CPU seconds so far of ``processes`` (default: the cluster's processes now;
        a list read once is cheaper to sum call by call than a scan of ``/proc``)."""
        if self.postmaster is None:
            return None
        total = 0.0
        for pid in self.processes() if processes is None else processes:
            try:
                # schedstat's first field: nanoseconds on a CPU (stat's ticks are 10 ms).
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
            except (OSError, IndexError, ValueError):
                continue  # a backend that has exited since
        return total


async def take_turns(
    contestants: dict[str, Operation], count: int, *,
    wal: asyncpg.Connection | None = None, server: ServerCpu | None = None,
) -> dict[str, dict[str, list[float]]]:
    """Per figure and contestant, the value per call of each round: ``count`` calls each
    a round, taking turns every `BLOCK` calls."""
    figures: dict[str, dict[str, list[float]]] = {
        figure: {name: [] for name in contestants}
        for figure in ("calls_per_s", "client_cpu_us", "server_cpu_us", "wal_bytes")}
    offset = 0
    for _ in range(rounds()):
        if wal is not None:
            # Statistics kept current as autovacuum would (it is off on the private
            # cluster, so that it writes no WAL mid-round): a plan cached from statistics
            # of a much smaller table seeks nothing (a seq scan of a table grown 10 times
            # since: main's record upserts did that, 3.3-3.9x LangGraph's server CPU).
            await wal.execute("ANALYZE")
        spent = {name: [0.0, 0.0, 0.0, 0.0] for name in contestants}
        for start in range(0, count, BLOCK):
            calls = min(BLOCK, count - start)
            for name, operation in contestants.items():
                lsn = await _lsn(wal)
                server_before = None if server is None else server.seconds()
                cpu, wall = time.process_time(), time.perf_counter()
                for index in range(calls):
                    await operation(offset + start + index)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                server_after = None if server is None else server.seconds()
                totals = spent[name]
                totals[0] += wall
                totals[1] += cpu
                if server_before is not None and server_after is not None:
                    totals[2] += server_after - server_before
                if wal is not None:
                    totals[3] += int(await wal.fetchval(
                        "SELECT pg_current_wal_insert_lsn() - $1::text::pg_lsn", lsn))
        offset += count
        for name, (wall, cpu, server_cpu, wal_bytes) in spent.items():
            figures["calls_per_s"][name].append(count / wall)
            figures["client_cpu_us"][name].append(cpu / count * 1e6)
            figures["server_cpu_us"][name].append(server_cpu / count * 1e6)
            figures["wal_bytes"][name].append(wal_bytes / count)
    return figures


async def _lsn(wal: asyncpg.Connection | None) -> str:
    return "0/0" if wal is None else str(await wal.fetchval(
        "SELECT pg_current_wal_insert_lsn()::text"))


@contextlib.contextmanager
def counting_driver_calls() -> Iterator[list[str]]:
    """Every call on an asyncpg connection and every psycopg ``execute`` while inside."""
    import psycopg

    calls: list[str] = []
    patched: list[tuple[Any, str, Any]] = []
    targets = [(asyncpg.Connection, name) for name in _ASYNCPG_CALLS] + [
        (psycopg.AsyncCursor, name) for name in _PSYCOPG_CALLS] + [
        (psycopg.AsyncConnection, "execute")]
    for owner, name in targets:
        real = owner.__dict__.get(name)
        if real is None:
            real = getattr(owner, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name,
                    **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kwargs)

        patched.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, counted)
    try:
        yield calls
    finally:
        for owner, name, original in reversed(patched):
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


async def count_calls(contestants: dict[str, Operation], counter: list[str],
                      base: int) -> dict[str, float]:
    """Calls (or statements) ``counter`` sees per call of each contestant."""
    counts = {}
    for name, operation in contestants.items():
        for index in range(5):  # a thread's first step, the pool's first connection
            await operation(base + index)
        counter.clear()
        for index in range(5, 5 + COUNTED):
            await operation(base + index)
        counts[name] = len(counter) / COUNTED
    return counts


async def run(results: Results) -> None:
    count = size(300, 10)
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:
        print("  (LangGraph not installed: pip install -e '.[bench]')")
        return
    table: list[tuple[str, str, dict[str, dict[str, list[float]]], dict[str, float]]] = []
    section(f"writes beside LangGraph's aput (issue 30 §4): {count} calls per round, "
            f"turns of {BLOCK}")
    with private_cluster() as dsn:
        admin = await asyncpg.connect(dsn)
        database = f"writes_{uuid.uuid4().hex[:8]}"
        await admin.execute(f'CREATE DATABASE "{database}"')
        url = dsn.rsplit("/", 1)[0] + f"/{database}"
        try:
            figures, counts = await _postgres(url, AsyncPostgresSaver)
            table.append(("PostgreSQL", "round trips", figures, counts))
        finally:
            await admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
            await admin.close()
    figures, counts = await _sqlite(AsyncSqliteSaver, count)
    table.append(("SQLite", "statements", figures, counts))
    _report(results, table)


async def _postgres(url: str, saver_class: Any) -> tuple[
        dict[str, dict[str, list[float]]], dict[str, float]]:
    count = size(300, 10)
    probe = await asyncpg.connect(url)
    await probe.execute("CREATE SCHEMA theirs")
    server = await ServerCpu.of(probe)
    if server.postmaster is None:
        print("  (the server's processes are not readable here: no server CPU)")
    async with _pg_contestants(url, saver_class, "") as contestants:
        with counting_driver_calls() as counter:
            counts = await count_calls(contestants, counter, 10**8)
        # `take_turns` analyzes before each round, as autovacuum would have by then:
        # without statistics the planner guesses between indexes of equal prefix (the
        # parent check of a create picked checkpoints_by_parent, filtering the session's
        # rows, until the table was analyzed).
        figures = await take_turns(contestants, count, wal=probe,
                                   server=server if server.postmaster else None)
    await probe.close()
    return figures, counts


@contextlib.asynccontextmanager
async def _pg_contestants(url: str, saver_class: Any, suffix: str
                          ) -> AsyncIterator[dict[str, Operation]]:
    async with open_log(url, schema=f"ours{suffix}") as log, \
            AsyncEventlogSaver.from_conn_string(url, tenant_id="bench",
                                                schema=f"ours_adapter{suffix}") as ours, \
            saver_class.from_conn_string(url + "?options=-csearch_path%3Dtheirs") as theirs:
        await theirs.setup()
        yield {"langgraph_aput": _putter(theirs, "theirs"), "create": creator(log, "s"),
               "aput": _putter(ours, "ours")}


async def _sqlite(saver_class: Any, count: int) -> tuple[
        dict[str, dict[str, list[float]]], dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="eventlog-writes-") as directory:
        root = Path(directory)
        with counting_statements() as counter:
            async with _sqlite_contestants(root, "counted-", saver_class) as contestants:
                counts = await count_calls(contestants, counter, 10**8)
        async with _sqlite_contestants(root, "", saver_class) as contestants:
            figures = await take_turns(contestants, count)
    return figures, counts


@contextlib.contextmanager
def counting_statements() -> Iterator[list[str]]:
    """Every statement run on a SQLite connection opened while inside (BEGIN, COMMIT and
    SAVEPOINTs included): ``sqlite3.connect`` is wrapped to trace each one."""
    calls: list[str] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = real(*args, **kwargs)
        connection.set_trace_callback(calls.append)
        return connection

    sqlite3.connect = connect  # type: ignore[assignment]
    try:
        yield calls
    finally:
        sqlite3.connect = real


@contextlib.asynccontextmanager
async def _sqlite_contestants(root: Path, prefix: str, saver_class: Any
                              ) -> AsyncIterator[dict[str, Operation]]:
    async with open_log(f"sqlite:///{root / f'{prefix}log.db'}") as log, \
            AsyncEventlogSaver.from_conn_string(f"sqlite:///{root / f'{prefix}adapter.db'}",
                                                tenant_id="bench") as ours, \
            saver_class.from_conn_string(str(root / f"{prefix}langgraph.db")) as theirs:
        await theirs.setup()
        yield {"langgraph_aput": _putter(theirs, "theirs"), "create": creator(log, "s"),
               "aput": _putter(ours, "ours")}


def _spread(figure: dict[str, list[float]], ours: str, theirs: str) -> tuple[float, float]:
    """The lowest and highest per-round ratio."""
    ratios = [a / b for a, b in zip(figure[ours], figure[theirs], strict=True) if b]
    return (min(ratios), max(ratios)) if ratios else (0.0, 0.0)


def _report(results: Results,
            table: list[tuple[str, str, dict[str, dict[str, list[float]]], dict[str, float]]]
            ) -> None:
    by_backend = {backend: (kind, figures, counts) for backend, kind, figures, counts in table}
    for backend, ours, theirs, server_goals in CASES:
        kind, figures, counts = by_backend[backend]
        case = f"{backend} {ours} ÷ LangGraph aput"
        print(f"\n  {case}")
        print(f"    {kind} per call: {ours} {counts[ours]:.1f}, LangGraph "
              f"{counts[theirs]:.1f}" + (" (statements, pipelined)" if backend == "PostgreSQL"
                                         else ""))
        rows = [("calls_per_s", "calls/s", "≥ 1.0", 1.0, None),
                ("client_cpu_us", "client CPU µs/call", "≤ 1.0", None, 1.0)]
        if backend == "PostgreSQL":
            goal = 1.5 if server_goals else None
            rows += [("server_cpu_us", "server CPU µs/call",
                      "≤ 1.5" if goal else "(info)", None, goal),
                     ("wal_bytes", "WAL B/call", "≤ 1.5" if goal else "(info)", None, goal)]
        for figure, unit, goal_text, at_least, at_most in rows:
            values = figures[figure]
            if not statistics.median(values[theirs]):
                continue
            low, high = _spread(values, ours, theirs)
            print(f"    per-round range of {unit} ratio: {low:.2f}–{high:.2f}")
            results.compare(f"{backend} {ours} ÷ LangGraph aput: {unit}", ours, theirs,
                            values, unit=unit, goal=goal_text, at_least=at_least,
                            at_most=at_most)
    print("\n  issue 30 §4 write table (ours ÷ LangGraph's aput; medians, per-round range)")
    for backend, ours, theirs, _ in CASES:
        kind, figures, counts = by_backend[backend]
        cells = []
        for figure, label in (("calls_per_s", "speed"), ("client_cpu_us", "client CPU"),
                              ("server_cpu_us", "server CPU"), ("wal_bytes", "WAL")):
            values = figures[figure]
            if not statistics.median(values[theirs]):
                continue
            mine, peer = (statistics.median(values[ours]), statistics.median(values[theirs]))
            low, high = _spread(values, ours, theirs)
            cells.append(f"{label} {mine / peer:.2f}× ({low:.2f}–{high:.2f}; "
                         f"{mine:,.0f} vs {peer:,.0f})")
        print(f"    {backend} {ours} ÷ aput: {' · '.join(cells)} · {kind} "
              f"{counts[ours]:.1f} vs {counts[theirs]:.1f}")
