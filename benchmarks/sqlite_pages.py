"""Which b-tree pages a SQLite write commits (issue 30 §4):
``python -m benchmarks.sqlite_pages [--calls N]``.

Each contestant (our `CheckpointStore.create`, our adapter's ``aput``, LangGraph's
``AsyncSqliteSaver.aput``; the chat steps of `benchmarks.bench_writes`) writes ``--calls``
calls to a file of its own with automatic WAL checkpoints off, so every page a commit
wrote is a frame of the write-ahead log. The frames are read back from the ``-wal`` file
and each page is named by ``dbstat`` (the table or index whose b-tree holds it). Printed:
frames per commit, and per table or index the pages per commit, most first. A page is
4 KiB of fsynced I/O; LangGraph's put writes about 4.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sqlite3
import struct
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import eventlog.storage.sqlite as sqlite_backend
from benchmarks.bench_writecost import _putter
from benchmarks.bench_writes import creator
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


async def measure(calls: int) -> None:
    sqlite_backend.CONNECTION_PRAGMAS.insert(0, "PRAGMA wal_autocheckpoint = 0")
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    with tempfile.TemporaryDirectory(prefix="eventlog-pages-") as directory:
        root = Path(directory)
        results: dict[str, tuple[float, collections.Counter[str], int]] = {}
        async with open_log(f"sqlite:///{root / 'log.db'}") as log:
            before = len([f for f in wal_frames(root / "log.db") if f[1]])
            await _run(creator(log, "s"), calls)
            results["create"] = attribute(root / "log.db", before)
        async with AsyncEventlogSaver.from_conn_string(
                f"sqlite:///{root / 'adapter.db'}", tenant_id="bench") as ours:
            before = len([f for f in wal_frames(root / "adapter.db") if f[1]])
            await _run(_putter(ours, "ours"), calls)
            results["adapter aput"] = attribute(root / "adapter.db", before)
        async with AsyncSqliteSaver.from_conn_string(str(root / "langgraph.db")) as theirs:
            await theirs.setup()
            connection: Any = theirs.conn
            await connection.execute("PRAGMA wal_autocheckpoint = 0")
            before = len([f for f in wal_frames(root / "langgraph.db") if f[1]])
            await _run(_putter(theirs, "theirs"), calls)
            results["LangGraph aput"] = attribute(root / "langgraph.db", before)
    for name, (per_commit, counted, commits) in results.items():
        print(f"{name}: {per_commit:.1f} pages per commit over {commits} commits")
        for owner, pages in counted.most_common():
            print(f"    {pages / commits:6.2f}  {owner}")


async def _run(operation: Operation, calls: int) -> None:
    for index in range(calls):
        await operation(index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    asyncio.run(measure(parser.parse_args().calls))


if __name__ == "__main__":
    main()
