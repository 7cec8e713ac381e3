"""Growth: a third worker joins and the shards rebalance onto it while 8 writer processes
append to their tenants and a follower reads the whole log: nothing acknowledged is lost,
nothing is stored twice, every chain and view verifies, the follower sees every event
exactly once, and reads answer throughout."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import asyncpg
import pytest

from eventlog import EventLog, RecordedEvent, open_log
from projections import compare_views
from tests.citus import cluster
from tests.conftest import BackendTarget
from tests.procs.settle import settle
from tests.test_processes import acknowledged, rest_of_output, writer

pytestmark = pytest.mark.citus

WRITERS = 8
SHARDS = 12
"""Shards per table here: 12 over two workers, so a third takes four shard groups."""
NEW_WORKER = cluster.PORT + 3
REBALANCE_TIMEOUT = 600.0


async def coordinator(sql: str, *args: Any) -> Any:
    connection = await asyncpg.connect(cluster.BASE_URL)
    try:
        return await connection.fetch(sql, *args)
    finally:
        await connection.close()


async def add_worker_without_shards() -> None:
    """The fourth server, started and in the cluster, holding no shards of new tables."""
    where = cluster.scripts()
    assert where is not None, "no cluster.sh to start the new worker with"
    started = await asyncio.create_subprocess_exec(
        str(where / "cluster.sh"), "add-worker", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    output, _ = await started.communicate()
    assert 0 == started.returncode, output.decode()[-600:]
    await coordinator("SELECT citus_set_node_property('127.0.0.1', $1, 'shouldhaveshards', "
                      "false)", NEW_WORKER)


async def placements_on_new_worker(schema: str) -> int:
    rows = await coordinator(
        "SELECT count(*) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) "
        "JOIN pg_class c ON c.oid = s.logicalrelid JOIN pg_namespace n ON n.oid = "
        "c.relnamespace WHERE n.nspname = $1 AND p.nodeport = $2", schema, NEW_WORKER)
    return int(rows[0][0])


async def rebalance(schema: str) -> float:
    """Let the new worker hold shards and move them there; the seconds it took."""
    started = time.monotonic()
    await coordinator("SELECT citus_set_node_property('127.0.0.1', $1, 'shouldhaveshards', "
                      "true)", NEW_WORKER)
    rows = await coordinator("SELECT citus_rebalance_start()")
    job = rows[0][0]
    assert job is not None, "the rebalancer found nothing to move"
    while True:
        rows = await coordinator(
            "SELECT state::text FROM pg_dist_background_job WHERE job_id = $1", job)
        if rows[0][0] in ("finished", "failed", "cancelled", "failing", "cancelling"):
            assert "finished" == rows[0][0]
            return time.monotonic() - started
        assert time.monotonic() - started < REBALANCE_TIMEOUT, "the rebalance did not finish"
        await asyncio.sleep(1)


async def follow(log: EventLog, done: asyncio.Event, tenants: list[str],
                 errors: list[str]) -> list[RecordedEvent]:
    """Follow the whole log (and read each tenant) until ``done``; then drain."""
    seen: list[RecordedEvent] = []
    cursor: str | None = None
    reads = 0
    while not done.is_set():
        try:
            page = await log.read_all(after=cursor, limit=500)
            await log.read_all(tenant_id=tenants[reads % len(tenants)], limit=50)
        except Exception as error:  # every failed read is a finding
            errors.append(f"{type(error).__name__}: {error}"[:300])
            await asyncio.sleep(0.1)
            continue
        reads += 1
        seen.extend(page.events)
        cursor = page.cursor
        if not page.events:
            await asyncio.sleep(0.05)
    await settle(log)
    while page := await log.read_all(after=cursor, limit=1000):
        if not page.events:
            break
        seen.extend(page.events)
        cursor = page.cursor
    return seen


async def test_a_worker_added_and_rebalanced_under_8_writers_loses_nothing(
    citus_schema: str, capsys: pytest.CaptureFixture[str],
) -> None:
    await add_worker_without_shards()
    url = f"{cluster.BASE_URL}?citus.shard_count={SHARDS}&distributed=true"
    target = BackendTarget("postgresql", url, citus_schema)
    tenants = [f"tenant-{n}" for n in range(WRITERS)]
    async with open_log(target.url, schema=citus_schema) as log:
        assert 0 == await placements_on_new_worker(citus_schema)
        processes = [writer(target, tenant, "s0,s1,s2", 0, blob_every=3) for tenant in tenants]
        for process in processes:
            assert process.stdout is not None
            assert '{"ready": true}' == process.stdout.readline().strip()
        done, errors = asyncio.Event(), []
        follower = asyncio.create_task(follow(log, done, tenants, errors))
        try:
            seconds = await rebalance(citus_schema)
            await asyncio.sleep(2)  # appends go on against the moved shards
        finally:
            for process in processes:
                process.terminate()
        acked = [acknowledged(rest_of_output(process)) for process in processes]
        done.set()
        seen = await follower
        moved = await placements_on_new_worker(citus_schema)
        await settle(log)
        report = await log.verify()
        drift = await compare_views(log)
        stored: dict[str, list[str]] = {}
        for tenant in tenants:
            for stream in ("s0", "s1", "s2"):
                events = [event async for event in log.read_stream(tenant, stream)]
                assert list(range(1, len(events) + 1)) == [event.version for event in events]
                stored.setdefault(tenant, []).extend(str(e.event_id) for e in events)
    all_stored = [event_id for ids in stored.values() for event_id in ids]
    lost = {line["event_id"] for lines in acked for line in lines} - set(all_stored)
    with capsys.disabled():
        print(f"\nrebalance: {moved} placements moved to the new worker in {seconds:.0f} s; "
              f"{sum(map(len, acked))} appends acknowledged by {WRITERS} writers, "
              f"{len(all_stored)} events stored, {len(seen)} followed, {len(errors)} failed "
              "reads")
    assert moved > 0
    assert (set(), [], [], []) == (lost, [n for n in Counter(all_stored).values() if n != 1],
                                    report.problems, drift)
    assert [] == errors
    assert sorted(all_stored) == sorted(str(event.event_id) for event in seen)
