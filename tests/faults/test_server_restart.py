"""PostgreSQL restarted under 8 writer processes: clear errors while down, then on by itself.

The restart happens on a throwaway cluster of this test's own (`tests.faults.clusters`),
never on the shared server.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord, open_log
from projections import compare_views
from tests.conftest import IN_CI
from tests.events import Noted
from tests.faults.clusters import Cluster, cluster_problem, clusters_dir, wait_until_ready

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 8
SECONDS = 120.0
"""A writer's cap; each stops when the test says (`AFTER_UP`)."""
AFTER_UP = 5.0
"""How long the writers go on once the server answers again. (A fixed 14 s from each
writer's start left one writer nothing after the restart in a CI run on a loaded machine:
the restart waits for the slowest writer's first append.)"""
CLEAR_ERRORS = {"StorageError", "CommitOutcomeUnknown"}


@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A PostgreSQL cluster this test may stop and start as it likes."""
    problem = cluster_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"cannot make a throwaway PostgreSQL cluster: {problem}")
        pytest.skip(f"cannot make a throwaway PostgreSQL cluster: {problem}")
    with clusters_dir() as root:
        cluster = Cluster(root, "restarted")
        cluster.initdb()
        cluster.start()
        try:
            yield cluster
        finally:
            if cluster.running():
                cluster.stop("immediate")


def start_writer(url: str, number: int, stop_file: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.procs.cut_writer", url, "eventlog", "rs", f"w{number}",
         "0", str(SECONDS), str(stop_file)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
        stdout=subprocess.PIPE,
    )


def restart_under_writers(
    cluster: Cluster, mode: str, stop_file: Path
) -> tuple[list[list[dict[str, Any]]], float, float]:
    """Run the writers, restart the server once each has appended (down ~2 s), let them
    go on `AFTER_UP` seconds; their lines, and when the server went down and came back.
    Each writer's output is drained as it comes (a full pipe would stall it)."""
    processes = [start_writer(cluster.url(), number, stop_file) for number in range(WRITERS)]
    texts: list[list[str]] = [[] for _ in processes]
    drains = [threading.Thread(target=lambda p=process, out=text: out.extend(p.stdout))
              for process, text in zip(processes, texts, strict=True)]
    for drain in drains:
        drain.start()
    deadline = time.monotonic() + 120
    while not all(texts) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1)
    down = time.time()
    cluster.stop(mode)
    time.sleep(2)
    cluster.start()
    wait_until_ready(cluster)
    up = time.time()
    time.sleep(AFTER_UP)
    stop_file.touch()
    outputs = []
    for process, drain, text in zip(processes, drains, texts, strict=True):
        assert 0 == process.wait(timeout=120), "".join(text)[-2000:]
        drain.join(timeout=30)
        outputs.append([json.loads(line) for line in text])
    return outputs, down, up


@pytest.mark.faults
@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_writers_carry_on_after_a_server_restart(own_cluster: Cluster, mode: str) -> None:
    """Errors only while the server is down, all of ours; every writer appends again after.

    ``fast`` is a clean restart; ``immediate`` ends the server like a crash (recovery from
    the write-ahead log on start)."""
    async with open_log(own_cluster.url()):
        pass
    outputs, down, up = await asyncio.to_thread(restart_under_writers, own_cluster, mode,
                                                own_cluster.directory.parent / "stop")
    lines = [line for output in outputs for line in output]
    errors = [line for line in lines if "error" in line]
    print(f"restart ({mode}): {sum('ack' in line for line in lines)} acknowledged, errors "
          f"{dict(Counter(line['error'] for line in errors))}, down {up - down:.1f} s")
    unclear = [line for line in errors if line["error"] not in CLEAR_ERRORS]
    for line in errors[:: max(1, len(errors) // 4)] + unclear:
        print(f"  {line['at'] - up:+.2f} s after up: {line['error']}: {line['detail']}")
    assert set() == {line["error"] for line in errors} - CLEAR_ERRORS
    assert all("postgresql" in line["detail"] for line in errors)
    # Once the server answers again (1 s of grace for a pool to notice), nothing fails.
    assert [] == [line for line in errors if line["at"] > up + 1.0]
    for number, output in enumerate(outputs):
        # What a writer that stopped acknowledging did last, relative to the server's return.
        last = [{**line, "at": round(line["at"] - up, 2)} for line in output if "at" in line]
        assert any(line.get("at", 0) > up + 1.0 for line in output if "ack" in line), (
            f"writer {number}: no append acknowledged after the server answered again; "
            f"its last lines: {last[-5:]}; its lines in all: {len(output)}")
        pool = next(line for line in output if "pool_open" in line)
        assert pool["pool_open"] == pool["pool_idle_alive"]
    async with open_log(own_cluster.url()) as log:
        texts: list[str] = []
        ids: set[str] = set()
        assert Noted  # registers test.noted for decoding
        for stream in ("s0", "s1", "s2"):
            events = [event async for event in log.read_stream("rs", stream)]
            assert list(range(1, len(events) + 1)) == [event.version for event in events]
            texts += [event.event.text for event in events]  # type: ignore[attr-defined]
            ids |= {str(event.event_id) for event in events}
        assert {} == {text: n for text, n in Counter(texts).items() if n > 1}
        assert set() == {line["event_id"] for line in lines if "ack" in line} - ids
        report = await log.verify()
        assert ([], []) == (report.problems, await compare_views(log))


async def test_an_idle_log_reads_and_appends_at_once_after_a_restart(
    own_cluster: Cluster,
) -> None:
    """Every pooled connection died in the restart; the first call of each kind succeeds.

    Before SQLAlchemy's pool refused connections the server had closed, the first
    `read_stream` (and each read through that pool) after a restart failed once."""
    async with open_log(own_cluster.url()) as log:
        session = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"n": 1}))
        await log.append("t", "notes", [Noted(text="before")])
        assert [1] == [event.version async for event in log.read_stream("t", "notes")]
        assert (await log.verify()).ok

        def restart() -> None:
            own_cluster.stop("fast")
            own_cluster.start()

        await asyncio.to_thread(restart)  # the application's loop runs on meanwhile
        assert [1] == [event.version async for event in log.read_stream("t", "notes")]
        assert 1 == len(await log.checkpoints.list("t", "s"))
        assert {"n": 1} == await log.checkpoints.read("t", "s", session.checkpoint_id)
        assert 2 == (await log.append("t", "notes", [Noted(text="after")])).version
        assert (await log.verify()).ok
