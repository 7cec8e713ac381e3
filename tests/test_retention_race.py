"""A retention pass beside a real writer process (SQLite and PostgreSQL): the writer
appends session checkpoints and thread puts without a fence while passes with
keep_latest=3 run over the same tenant, its own session and thread included. Every
checkpoint it wrote is either still listed or named purged by a pass's recorded batch
(none lost unreported), the latest three of each are kept, the log verifies, and the
writer kept writing throughout (its successful writes beside the passes, against its
writes alone just before, are printed as a ratio)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.events.retention import RETENTION_STREAM, RetentionPurged
from tests.conftest import BackendTarget

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PHASE_SECONDS = 3.0
RUN = "018f0000-0000-7000-8000-000000000002"


async def _seed(log: OpenLog) -> None:
    for session in range(20):
        for n in range(15):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="acme", session_id=f"old-{session}", run_id=RUN,
                checkpoint_id=f"c-{n}", state={"session": session, "n": n}))


def _spawn(target: BackendTarget) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.procs.retention_writer", target.url, target.schema,
         "acme", "hot", str(PHASE_SECONDS)],
        cwd=ROOT, env=ENV, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _send(process: subprocess.Popen[str], line: str = "go") -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def _line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline()


async def _purged(log: OpenLog, kind: str, stream: str) -> list[str]:
    return [name async for event in log.read_stream("acme", RETENTION_STREAM)
            if isinstance(event.event, RetentionPurged)
            for item in event.event.streams if (item.kind, item.id) == (kind, stream)
            for name in item.checkpoints]


@pytest.mark.slow  # a real writer process beside the passes (the crash and race campaign)
@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_writer_beside_retention_passes_loses_nothing(target: BackendTarget) -> None:
    """See the module docstring."""
    async with open_log(target.url, **target.options()) as log:
        await _seed(log)
        process = _spawn(target)
        try:
            assert '{"ready": true}' == _line(process).strip()
            _send(process)
            assert '{"phase": 1}' == _line(process).strip()
            _send(process)
            done = asyncio.ensure_future(asyncio.to_thread(_line, process))
            passes, durations, longest = 0, [], 0.0
            while not done.done():
                started = time.monotonic()
                report = await log.retention.apply("acme", keep_latest=3, batch_size=100)
                durations.append(round(time.monotonic() - started, 3))
                longest = max(longest, report.longest_batch_s)
                passes += 1
            summary = json.loads(await done)
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        final = await log.retention.apply("acme", keep_latest=3)
        written = summary["written"]
        sessions = [name for name in written if name.startswith("s-")]
        threads = [name for name in written if name.startswith("t-")]
        listed = [r.checkpoint_id for r in await log.checkpoints.list("acme", "hot")]
        put = sorted(c.checkpoint_id for c in await log.threads.page("acme", "hot",
                                                                      payloads=False))
        purged_sessions = await _purged(log, "session", "hot")
        purged_threads = await _purged(log, "thread", "hot")
        ratio = summary["beside"] / max(summary["alone"], 1)
        print(f"\n{target.name}: {passes} passes beside the writer (+1 after); writes alone "
              f"{summary['alone']}, beside the passes {summary['beside']} "
              f"(ratio {ratio:.2f}); slowest write alone {summary['slowest'][0]:.3f} s, beside "
              f"{summary['slowest'][1]:.3f} s; "
              f"errors {summary['errors']}; skipped {final.skipped}; pass seconds {durations}; "
              f"longest batch {longest:.3f} s")
        assert ({}, sessions[-3:], threads[-3:]) == (summary["errors"], listed, put)
        assert (sorted(sessions), sorted(threads)) == (
            sorted(listed + purged_sessions), sorted(put + purged_threads))
        assert (True, True) == (summary["beside"] > 0, passes > 0)
        assert [3] * 20 == [len(await log.checkpoints.list("acme", f"old-{n}"))
                            for n in range(20)]
        assert (await log.verify()).ok
