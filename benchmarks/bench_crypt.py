"""Encryption (issue 32): create, the LangGraph adapter's ``aput`` and read, with a keyring
beside without, on SQLite and PostgreSQL; and the stored bytes per checkpoint.

Measured in one process and one run, the two logs interleaved round by round: each
contestant a log of its own on the same backend, one with ``keyring=`` (every state and
metadata sealed with AES-256-GCM under its session's or thread's data key, the key
cached after its first use), one without. ~2 KB state per checkpoint. Stored bytes are
the events' and blobs' bytes per checkpoint as the database holds them.
Caveats: client and server share 2 cores; fsync on; the first write of each session
makes its data key (one more statement), which the figures include (sessions of 100).
"""

from __future__ import annotations

import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg

from benchmarks.common import PG_URL, Results, interleave, scratch_schema, section, size
from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.crypto import init_keyring

STATE = {"messages": ["x" * 100] * 18, "step": 1}  # ~2 KB as JSON
META = {"source": "loop", "user": "someone@example.com"}


@asynccontextmanager
async def _logs(backend: str, directory: Path) -> AsyncIterator[tuple[OpenLog, OpenLog]]:
    """A plain log and an encrypted one on ``backend``."""
    # Encryption alone: the writer key's signatures are measured apart (bench_signing).
    keyring = init_keyring(directory / "keyring.json", writer=False)
    async with AsyncExitStack() as stack:
        if backend == "sqlite":
            plain = await stack.enter_async_context(open_log(f"sqlite:///{directory}/p.db"))
            sealed = await stack.enter_async_context(
                open_log(f"sqlite:///{directory}/s.db", keyring=keyring))
        else:
            one = await stack.enter_async_context(scratch_schema())
            two = await stack.enter_async_context(scratch_schema())
            plain = await stack.enter_async_context(open_log(PG_URL, schema=one))
            sealed = await stack.enter_async_context(
                open_log(PG_URL, schema=two, keyring=keyring))
        yield plain, sealed


def _creator(log: OpenLog, run_id: uuid.UUID) -> Callable[[int], Awaitable[object]]:
    async def create(i: int) -> None:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=f"s{i // 100}", run_id=run_id, step=i,
            state={**STATE, "step": i}, metadata=META))
    return create


def _putter(saver: Any) -> Callable[[int], Awaitable[object]]:
    from langgraph.checkpoint.base import empty_checkpoint

    async def aput(i: int) -> None:
        config = {"configurable": {"thread_id": f"lg-{i // 100}", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"state": {**STATE, "step": i}}
        checkpoint["channel_versions"] = {"state": i + 1}
        await saver.aput(config, checkpoint, {"step": i, **META}, {"state": i + 1})
    return aput


def _reader(log: OpenLog, ids: list[str]) -> Callable[[int], Awaitable[object]]:
    async def read(i: int) -> None:
        await log.checkpoints.read("t", "read", ids[i % len(ids)])
    return read


async def _stored_bytes(backend: str, log: OpenLog, path: Path | None) -> float:
    """Events' and blobs' bytes per checkpoint of session ``read``."""
    sql = ("SELECT (SELECT sum(length(data)) FROM {p}events WHERE stream_id = 'session:read')"
           " + (SELECT sum(length(data)) FROM {p}blobs), (SELECT count(*) FROM {p}events "
           "WHERE stream_id = 'session:read')")
    if backend == "sqlite":
        assert path is not None
        with sqlite3.connect(path) as connection:
            total, count = connection.execute(sql.format(p="")).fetchone()
    else:
        connection = await asyncpg.connect(PG_URL)
        schema = log.storage.schema  # type: ignore[attr-defined]
        total, count = await connection.fetchrow(sql.format(p=f'"{schema}".'))
        await connection.close()
    return float(total) / max(int(count), 1)


async def _fill(log: OpenLog, count: int) -> list[str]:
    run_id = uuid.uuid4()
    return [(await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="read", run_id=run_id, step=i, state={**STATE, "step": i},
        metadata=META))).checkpoint_id or "" for i in range(count)]


async def run(results: Results) -> None:
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    count = size(300, 10)
    for backend in ("sqlite", "postgresql"):
        section(f"{backend}: with a keyring beside without, {count} calls per round")
        with tempfile.TemporaryDirectory() as scratch:
            directory = Path(scratch)
            async with _logs(backend, directory) as (plain, sealed):
                ids = [await _fill(log, size(200, 5)) for log in (plain, sealed)]
                paths = ([directory / "p.db", directory / "s.db"] if backend == "sqlite"
                         else [None, None])
                plain_bytes = await _stored_bytes(backend, plain, paths[0])
                sealed_bytes = await _stored_bytes(backend, sealed, paths[1])
                print(f"    stored bytes per checkpoint (events + blobs): plain "
                      f"{plain_bytes:.0f}, encrypted {sealed_bytes:.0f} "
                      f"({sealed_bytes / plain_bytes:.2f}×)")
                run_id = uuid.uuid4()
                figures = await interleave(count, create=_creator(plain, run_id),
                                           create_encrypted=_creator(sealed, run_id))
                results.compare(f"{backend} create, encrypted vs plain", "create_encrypted",
                                "create", figures, goal="≥ 0.8", at_least=0.8)
                savers = [AsyncEventlogSaver(log) for log in (plain, sealed)]
                figures = await interleave(count, aput=_putter(savers[0]),
                                           aput_encrypted=_putter(savers[1]))
                results.compare(f"{backend} LangGraph aput, encrypted vs plain",
                                "aput_encrypted", "aput", figures, goal="≥ 0.8", at_least=0.8)
                figures = await interleave(count, read=_reader(plain, ids[0]),
                                           read_encrypted=_reader(sealed, ids[1]))
                results.compare(f"{backend} read, encrypted vs plain", "read_encrypted",
                                "read", figures, goal="≥ 0.8", at_least=0.8)
                results.notes[f"{backend}_bytes_per_checkpoint"] = {
                    "plain": plain_bytes, "encrypted": sealed_bytes}
