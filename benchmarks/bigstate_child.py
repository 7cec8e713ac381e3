"""One big-state operation in a fresh process, its memory peaks reported as JSON.

``python -m benchmarks.bigstate_child OPERATION SAVER URL SIZE [ROUNDS]``: writes (or writes, then
reads back) one value of ``SIZE`` random bytes and reports the peak bytes Python allocated
(``tracemalloc``) and the peak resident set growth (``VmHWM`` after resetting it through
``/proc/self/clear_refs``) while the operation ran, each beside the value's size. A
warm-up write and read of a small value come first, so one-time costs (imports, the
first statement's preparation, the connection) are out of the figures.

``SAVER`` is ``checkpoints`` (`CheckpointStore.create`/`read` of a bytes state),
``threads`` (our LangGraph saver: ``aput`` of a checkpoint whose one channel holds the
value, ``aget_tuple``), ``writes`` (our saver's ``aput_writes`` of the value, read back by
``aget_tuple``) or ``langgraph`` (LangGraph's own ``AsyncPostgresSaver`` or
``AsyncSqliteSaver``, ``aput`` and ``aget_tuple``), on ``URL`` (``sqlite:///path`` or
``postgresql://…?schema``). ``OPERATION`` is ``write``, ``read`` (the
figures of that one), ``both`` (each figure twice, prefixed ``write_`` and ``read_``) or
``rounds`` (those figures as lists, one entry per round: ``ROUNDS``, a fifth argument,
values each written and read back; the first three give one).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import os
import random
import sys
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

Operation = Callable[[], Awaitable[object]]


def rss_kb() -> int:
    """This process's peak resident set size since the last `reset_peak`, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def current_rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def reset_peak() -> None:
    """Reset ``VmHWM`` to the current resident size (Linux ≥ 4.0)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _fresh_pages() -> None:
    """Make glibc map every allocation of 128 KiB and more afresh and unmap it when freed
    (a fixed ``M_MMAP_THRESHOLD`` stops its dynamic raising), so that a call's resident
    set growth is measured afresh in every round: otherwise a later round reuses pages
    an earlier one freed and grows by nothing. The savers all run under the same rule."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD


async def measure(operation: Operation) -> dict[str, float]:
    """Seconds, tracemalloc peak bytes and resident-set growth (bytes) of one call."""
    gc.collect()
    reset_peak()
    before = current_rss_kb()
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    await operation()
    seconds = time.perf_counter() - started
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": seconds, "traced": traced, "rss": (rss_kb() - before) * 1024}


def checkpoint(number: int) -> dict[str, Any]:
    return {"v": 1, "id": str(uuid.UUID(int=number + 1)), "ts": "2026-12-03T00:00:00+00:00",
            "channel_values": {}, "channel_versions": {}, "versions_seen": {},
            "updated_channels": None}


class Saver:
    """The write and read of one value on one saver (set up by `saver`)."""

    def __init__(self, put: Callable[[int, bytes], Awaitable[object]],
                 get: Callable[[int], Awaitable[object]]) -> None:
        self.put, self.get = put, get


@asynccontextmanager
async def saver(kind: str, url: str) -> AsyncIterator[Saver]:
    if kind == "checkpoints":
        async with _checkpoints(url) as found:
            yield found
    elif kind == "langgraph":
        async with _langgraph(url) as found:
            yield found
    else:
        async with _ours(url, writes=kind == "writes") as found:
            yield found


def _open_options(url: str) -> tuple[str, dict[str, Any]]:
    if url.startswith("postgresql") and "?" in url:
        base, schema = url.split("?", 1)
        return base, {"schema": schema}
    return url, {}


@asynccontextmanager
async def _checkpoints(url: str) -> AsyncIterator[Saver]:
    from eventlog import CheckpointRecord, open_log

    base, options = _open_options(url)
    run = uuid.uuid4()
    async with open_log(base, max_payload_bytes=200 * 2**20, **options) as log:
        async def put(number: int, value: bytes) -> object:
            return await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=run, checkpoint_id=f"c{number}",
                step=number, state=value))

        async def get(number: int) -> object:
            return await log.checkpoints.read("t", "s", f"c{number}")
        yield Saver(put, get)


@asynccontextmanager
async def _ours(url: str, *, writes: bool) -> AsyncIterator[Saver]:
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    base, options = _open_options(url)
    async with AsyncEventlogSaver.from_conn_string(
            base, max_payload_bytes=200 * 2**20, **options) as ours:
        yield _lg_saver(ours, writes=writes)


@asynccontextmanager
async def _langgraph(url: str) -> AsyncIterator[Saver]:
    if url.startswith("sqlite"):
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(url.removeprefix("sqlite:///")) as theirs:
            await theirs.setup()
            yield _lg_saver(theirs, writes=False)
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    base, schema = url.split("?", 1)
    import psycopg

    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    async with AsyncPostgresSaver.from_conn_string(
            f"{base}?options=-csearch_path%3D{schema}") as theirs:
        await theirs.setup()
        yield _lg_saver(theirs, writes=False)


def _lg_saver(saver: Any, *, writes: bool) -> Saver:
    def config(number: int | None = None) -> Any:
        configurable: dict[str, Any] = {"thread_id": "big", "checkpoint_ns": ""}
        if number is not None:
            configurable["checkpoint_id"] = checkpoint(number)["id"]
        return {"configurable": configurable}

    async def put(number: int, value: bytes) -> object:
        state = checkpoint(number)
        version = f"{number + 1:032}.0"
        if writes:
            state["channel_versions"] = {}
            await saver.aput(config(), state, {"step": number}, {})
            return await saver.aput_writes(config(number), [("big", value)], "task")
        state["channel_values"] = {"big": value}
        state["channel_versions"] = {"big": version}
        return await saver.aput(config(), state, {"step": number}, {"big": version})

    async def get(number: int) -> object:
        found = await saver.aget_tuple(config(number))
        assert found is not None
        return found
    return Saver(put, get)


async def main(operation: str, kind: str, url: str, size: int, rounds: int = 1
               ) -> dict[str, Any]:
    base = random.randrange(2**40)  # the store may hold earlier processes' checkpoints
    async with saver(kind, url) as one:
        await one.put(base, os.urandom(1000))
        await one.get(base)
        figures: dict[str, list[float]] = {}
        for number in range(base + 1, base + rounds + 1):
            held = [os.urandom(size)]  # a new value each round: content addressing
            wrote = await measure(lambda: one.put(number, held[0]))  # noqa: B023 - awaited here
            held.clear()  # the read's figures are not to include the caller's copy
            read = await measure(lambda: one.get(number))  # noqa: B023 - awaited here
            for prefix, measured in (("write", wrote), ("read", read)):
                for key, figure in measured.items():
                    figures.setdefault(f"{prefix}_{key}", []).append(figure)
    if operation == "rounds":
        return {**figures, "size": size}
    first = {key: values[0] for key, values in figures.items()}
    if operation == "both":
        return {**first, "size": size}
    return {key.split("_", 1)[1]: figure for key, figure in first.items()
            if key.startswith(operation)} | {"size": size}


if __name__ == "__main__":
    from benchmarks.common import quiet_logs

    quiet_logs()
    _fresh_pages()
    print(json.dumps(asyncio.run(main(*sys.argv[1:4], *map(int, sys.argv[4:6])))))
