"""Which b-tree pages a SQLite write commits (issue 30 §4):
``python -m benchmarks.sqlite_pages [--calls N]``.

Each contestant (our `CheckpointStore.create`, our adapter's ``aput``, LangGraph's
``AsyncSqliteSaver.aput``; the chat steps of `benchmarks.bench_writes`) writes ``--calls``
calls to a file of its own with automatic WAL checkpoints off, so every page a commit
wrote is a frame of the write-ahead log. The frames are read back from the ``-wal`` file
and each page is named by ``dbstat`` (the table or index whose b-tree holds it). Printed:
frames per commit, and per table or index the pages per commit, most first. A page is
4 KiB of fsynced I/O; LangGraph's put writes about 4.

Ours runs twice: on the current layout, and on a file whose view tables were given their
rowid back (migration 0015 downgraded, the file stamped current again), so the same code
measures both layouts in one run. Then every contestant's client CPU (`time.process_time`,
every thread) and calls/s, taking turns every `BLOCK` calls for ``BENCH_ROUNDS`` rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import sqlite3
import statistics
import struct
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import eventlog.storage.sqlite as sqlite_backend
from benchmarks.bench_writecost import _putter
from benchmarks.bench_writes import creator
from benchmarks.common import rounds
from eventlog import open_log
from eventlog.adapters.langgraph import AsyncEventlogSaver

Operation = Callable[[int], Awaitable[object]]


def wal_frames(path: Path) -> list[tuple[int, int]]:
    """Each frame of ``path``'s write-ahead log as (page number, commit size: 0 unless the
    frame ends a transaction)."""
    data = (path.parent / (path.name + "-wal")).read_bytes()
    if len(data) < 32:
        return []
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    frames = []
    offset = 32
    while offset + 24 + page_size <= len(data):
        if data[offset + 8:offset + 16] != salts:  # a frame of an earlier generation
            break
        page, commit = struct.unpack(">II", data[offset:offset + 8])
        frames.append((page, commit))
        offset += 24 + page_size
    return frames


def page_owners(path: Path) -> dict[int, str]:
    """Every page of the database by the b-tree (table or index) that holds it."""
    connection = sqlite3.connect(path)
    try:
        return {int(page): str(name) for name, page in
                connection.execute("SELECT name, pageno FROM dbstat")}
    finally:
        connection.close()


def attribute(path: Path, skip: int) -> tuple[float, collections.Counter[str], int]:
    """Frames per commit after the first ``skip`` commits; pages by owner; commits."""
    frames = wal_frames(path)
    owners = page_owners(path)
    commits = 0
    counted: collections.Counter[str] = collections.Counter()
    total = 0
    for page, commit in frames:
        if commits >= skip:
            counted[owners.get(page, "(free or header)" if page > 1 else "(header)")] += 1
            total += 1
        if commit:
            commits += 1
    measured = max(1, commits - skip)
    return total / measured, counted, measured


ROWID = "0009_transparency_tree"
"""The revision before the view tables lost their rowid (migration 0015)."""


def as_rowid_tables(path: Path) -> None:
    """Give ``path``'s view tables their rowid back (migration 0015's downgrade), and stamp
    the file current again: the same code then writes the old layout."""
    import sqlalchemy as sa
    from alembic import command

    from eventlog.storage.migrate import alembic_config, shipped_head
    from eventlog.storage.schema import build_metadata

    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            command.downgrade(alembic_config(connection, None, build_metadata("sqlite", None)),
                              ROWID)
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = ?",
                                       (shipped_head(),))
    finally:
        engine.dispose()


async def measure(calls: int) -> None:
    """Pages per commit of each contestant; then its client CPU and calls/s, contestants
    taking turns every `BLOCK` calls for `rounds` rounds (ours on both layouts)."""
    sqlite_backend.CONNECTION_PRAGMAS.insert(0, "PRAGMA wal_autocheckpoint = 0")
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    with tempfile.TemporaryDirectory(prefix="eventlog-pages-") as directory:
        root = Path(directory)
        for name in ("log", "adapter"):
            async with open_log(f"sqlite:///{root / f'rowid-{name}.db'}"):
                pass
            as_rowid_tables(root / f"rowid-{name}.db")
        async with contextlib.AsyncExitStack() as stack:
            contestants: dict[str, tuple[Operation, Path]] = {}
            for layout, prefix in (("", ""), (" (rowid tables)", "rowid-")):
                log = await stack.enter_async_context(
                    open_log(f"sqlite:///{root / f'{prefix}log.db'}"))
                contestants["create" + layout] = (creator(log, "s"), root / f"{prefix}log.db")
                saver = await stack.enter_async_context(AsyncEventlogSaver.from_conn_string(
                    f"sqlite:///{root / f'{prefix}adapter.db'}", tenant_id="bench"))
                contestants["adapter aput" + layout] = (_putter(saver, "ours"),
                                                         root / f"{prefix}adapter.db")
            theirs = await stack.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(root / "langgraph.db")))
            await theirs.setup()
            await theirs.conn.execute("PRAGMA wal_autocheckpoint = 0")
            contestants["LangGraph aput"] = (_putter(theirs, "theirs"), root / "langgraph.db")
            for name, (operation, path) in contestants.items():
                before = len([f for f in wal_frames(path) if f[1]])
                await _run(operation, 0, calls)
                per_commit, counted, commits = attribute(path, before)
                print(f"{name}: {per_commit:.1f} pages per commit over {commits} commits")
                for owner, pages in counted.most_common():
                    print(f"    {pages / commits:6.2f}  {owner}")
            await _timed({name: operation for name, (operation, _) in contestants.items()},
                         calls)


BLOCK = 50


async def _timed(contestants: dict[str, Operation], calls: int) -> None:
    cpu: dict[str, list[float]] = {name: [] for name in contestants}
    speed: dict[str, list[float]] = {name: [] for name in contestants}
    offset = calls
    for _ in range(rounds()):
        spent = {name: [0.0, 0.0] for name in contestants}
        for start in range(0, calls, BLOCK):
            for name, operation in contestants.items():
                began, wall = time.process_time(), time.perf_counter()
                await _run(operation, offset + start, min(BLOCK, calls - start))
                spent[name][0] += time.process_time() - began
                spent[name][1] += time.perf_counter() - wall
        offset += calls
        for name, (used, wall) in spent.items():
            cpu[name].append(used / calls * 1e6)
            speed[name].append(calls / wall)
    theirs = "LangGraph aput"
    print(f"\nclient CPU and calls/s, {rounds()} rounds of {calls} calls, turns of {BLOCK} "
          "(ratios ÷ LangGraph's aput: median, per-round range)")
    for name in contestants:
        cpu_ratios = [a / b for a, b in zip(cpu[name], cpu[theirs], strict=True)]
        speed_ratios = [a / b for a, b in zip(speed[name], speed[theirs], strict=True)]
        print(f"  {name:30} CPU {statistics.median(cpu[name]):6.0f} µs "
              f"({statistics.median(cpu_ratios):.2f}×, {min(cpu_ratios):.2f}–"
              f"{max(cpu_ratios):.2f})  calls/s {statistics.median(speed[name]):6.0f} "
              f"({statistics.median(speed_ratios):.2f}×, {min(speed_ratios):.2f}–"
              f"{max(speed_ratios):.2f})")


async def _run(operation: Operation, first: int, calls: int) -> None:
    for index in range(first, first + calls):
        await operation(index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    asyncio.run(measure(parser.parse_args().calls))


if __name__ == "__main__":
    main()
