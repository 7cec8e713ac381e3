"""The log on a Citus cluster against the same on one server, in the same run.

``python -m benchmarks --only citus`` (not in the default sections: it needs the cluster
of ``../shared/citus/cluster.sh start``; ``EVENTLOG_BENCH_CITUS`` names another
coordinator). Both contestants live on the coordinator's server, so the single-node log
has the same PostgreSQL build and settings: one in a plain schema, one in a schema
opened with ``distributed=True`` (every table sharded by tenant over the workers).
Measured: checkpoint creates per second (~2 KB state, one tenant per 100 creates, so
the creates spread over the workers), and ``latest`` of a session (calls/s, and its p50
latency). Caveats: one client connection each; the coordinator, both workers and the
client share this machine's cores, so every hop the cluster adds (client to coordinator
to worker) costs CPU here instead of running on separate machines.
"""

from __future__ import annotations

import os
import uuid
from contextlib import AsyncExitStack
from typing import Any

import asyncpg

from benchmarks.common import Results, interleave, latencies, percentile, section, size
from eventlog import CheckpointRecord, open_log

CITUS_URL = os.environ.get("EVENTLOG_BENCH_CITUS", "postgresql://postgres@127.0.0.1:5441/postgres")
STATE = {"messages": ["x" * 100] * 18, "step": 1}  # ~2 KB as JSON


async def _reachable() -> str | None:
    try:
        connection = await asyncpg.connect(CITUS_URL, timeout=5)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    try:
        workers = await connection.fetchval(
            "SELECT count(*) FROM citus_get_active_worker_nodes()")
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    finally:
        await connection.close()
    return None if workers else "no active workers"


async def run(results: Results) -> None:
    count = size(300, 10)
    section(f"Citus cluster vs one server: {count} checkpoint creates per round")
    problem = await _reachable()
    if problem is not None:
        print(f"  (no Citus coordinator at {CITUS_URL}: {problem}; start one with "
              "../shared/citus/cluster.sh start)")
        return
    schemas = [f"bench_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    try:
        async with AsyncExitStack() as stack:
            single = await stack.enter_async_context(open_log(CITUS_URL, schema=schemas[0]))
            cluster = await stack.enter_async_context(
                open_log(CITUS_URL, schema=schemas[1], distributed=True))
            run_id = uuid.uuid4()

            def create(log: Any) -> Any:
                async def call(i: int) -> None:
                    await log.checkpoints.create(CheckpointRecord(
                        tenant_id=f"t{i // 100}", session_id="s", run_id=run_id, step=i,
                        state={**STATE, "step": i}))
                return call

            figures = await interleave(count, single_create=create(single),
                                       cluster_create=create(cluster))
            results.compare("checkpoint create, Citus (2 workers) vs one server",
                            "cluster_create", "single_create", figures,
                            goal="none on one machine (see docs/benchmarks.md)")
            calls = size(500, 10)
            latest = await interleave(
                calls, single_latest=lambda _i: single.checkpoints.latest("t0", "s"),
                cluster_latest=lambda _i: cluster.checkpoints.latest("t0", "s"))
            results.compare("latest, Citus (2 workers) vs one server", "cluster_latest",
                            "single_latest", latest, unit="calls/s",
                            goal="none on one machine (see docs/benchmarks.md)")
            for name, log in (("single", single), ("cluster", cluster)):
                times = await latencies(lambda _i, log=log: log.checkpoints.latest("t0", "s"),
                                        calls)
                print(f"    {name + '_latest p50':<44} {percentile(times, 0.5) * 1000:>12.2f} ms"
                      f"   (p99 {percentile(times, 0.99) * 1000:.2f} ms)")
    finally:
        connection = await asyncpg.connect(CITUS_URL)
        try:
            for schema in schemas:
                await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()
