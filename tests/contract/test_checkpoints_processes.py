"""Contract: checkpoint writers in separate processes, on a SQLite file and on PostgreSQL.

Creates from several processes into one session all land (none lost, none doubled), and a
delete racing them removes every record exactly once and leaves no blob reference behind.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.hashing import content_digest
from projections import compare_views
from tests.procs.settle import settle

if TYPE_CHECKING:
    from tests.conftest import BackendTarget

pytestmark = pytest.mark.slow

WORKERS = 3
EACH = 20
STATE = {"shared": True}


def create_many(url: str, options: dict[str, Any], session: str, worker: int) -> None:
    """A worker process: create `EACH` checkpoints in ``session``, all with `STATE`."""

    async def run() -> None:
        async with open_log(url, **options) as log:
            run_id = uuid.uuid4()
            for number in range(EACH):
                await log.checkpoints.create(CheckpointRecord(
                    tenant_id="t", session_id=session, run_id=run_id,
                    checkpoint_id=f"w{worker}-{number}", step=number, state=STATE,
                ))

    asyncio.run(run())


def start_workers(target: BackendTarget, session: str) -> list[Any]:
    """Start `WORKERS` creating processes, forked from a clean single-threaded server that
    has this module imported already (so no event loop or driver thread is inherited, and
    no process pays for the imports again)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    workers = [
        context.Process(target=create_many, args=(target.url, target.options(), session, n))
        for n in range(WORKERS)
    ]
    for worker in workers:
        worker.start()
    return workers


def require_multiprocess(target: BackendTarget) -> None:
    """Only SQLite files and PostgreSQL are shared between processes."""
    if target.name not in ("sqlite", "postgresql"):
        pytest.skip(f"a {target.name} store belongs to one process")


async def wait_for(workers: list[Any]) -> None:
    """Join the workers (in a thread, not blocking the loop); each must have succeeded."""
    for worker in workers:
        await asyncio.to_thread(worker.join)
    assert [0] * len(workers) == [worker.exitcode for worker in workers]


async def test_creates_from_many_processes_all_land(target: BackendTarget) -> None:
    """Every create of every process is listed once, each process's in its own order."""
    require_multiprocess(target)
    async with open_log(target.url, **target.options()):
        pass  # create the schema before the workers race to
    await wait_for(start_workers(target, "shared"))
    async with open_log(target.url, **target.options()) as log:
        listed = [r.checkpoint_id for r in await log.checkpoints.list("t", "shared")]
        refs = dict(await log.storage.blob_refs("t"))
        await settle(log)
        differences = await compare_views(log)
        verified = (await log.verify()).ok
    assert WORKERS * EACH == len(listed) == len(set(listed))
    for worker in range(WORKERS):
        mine = [c for c in listed if c is not None and c.startswith(f"w{worker}-")]
        assert [f"w{worker}-{n}" for n in range(EACH)] == mine
    assert ({content_digest(b'{"shared":true}'): WORKERS * EACH}, [], True) == (
        refs, differences, verified
    )


async def test_deletes_racing_creates_remove_each_record_once(
    target: BackendTarget, request: pytest.FixtureRequest
) -> None:
    """Deletes interleaved with other processes' creates count every record exactly once,
    and once all is deleted no blob reference is left."""
    require_multiprocess(target)
    async with open_log(target.url, **target.options()) as log:
        workers = start_workers(target, "raced")
        removed = 0
        while any(worker.is_alive() for worker in workers):
            removed += await log.checkpoints.delete("t", "raced")
            await asyncio.sleep(0.005)
        await wait_for(workers)
        removed += await log.checkpoints.delete("t", "raced")
        await settle(log)
        outcome = (
            removed, await log.checkpoints.list("t", "raced"),
            dict(await log.storage.blob_refs("t")), await compare_views(log),
            (await log.verify()).ok,
        )
    assert (WORKERS * EACH, [], {}, [], True) == outcome
