"""The contention campaign (issue 21, item 5): four real LangGraph processes on one thread,
mixing invokes with prune, delete_thread, copy_thread and delete_for_runs, for
`SECONDS` on SQLite and on PostgreSQL (``pytest -m contention -s``, ~1½ min).

On main every run raised `VersionConflict` from prune and the deletes after 16
re-decisions (15 s runs here: 23 on SQLite, 21 on PostgreSQL; the issue: no PostgreSQL
delete succeeded in 20 s), and `delete_thread`/`copy_thread` raised
`StorageError(DeadlockDetectedError)`. Every operation must now complete, and the log
must verify. The run prints its counts: operations by kind, the removals decided again
after a lost race (``removal_retried``), the appends retried (``append_retried``, by
reason: a version race, a deadlock) and the slowest removal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from tests.conftest import BackendTarget
from tests.procs.settle import settle

pytestmark = pytest.mark.contention

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PROCESSES = 4
SECONDS = 25.0
REMOVALS = ("prune", "delete_thread", "copy_thread", "delete_for_runs")


def mixers(target: BackendTarget) -> list[dict[str, Any]]:
    """Run `PROCESSES` mixers on one thread for `SECONDS`; their summaries."""
    processes = [subprocess.Popen(
        [sys.executable, "-m", "tests.procs.lg_mixer", target.url, target.schema, "acme",
         "shared", f"w{number}", str(SECONDS)],
        cwd=ROOT, env=ENV, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    ) for number in range(PROCESSES)]
    try:
        for process in processes:
            assert process.stdout is not None
            assert '{"ready": true}' == process.stdout.readline().strip()
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        summaries = []
        for process in processes:
            assert process.stdout is not None
            summaries.append(json.loads(process.stdout.readline()))
            process.wait(timeout=120)
        return summaries
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_removals_complete_under_four_langgraph_processes(target: BackendTarget) -> None:
    """Every invoke, prune, delete and copy of four processes on one thread completes:
    no `VersionConflict` and no `StorageError` escapes, each kind ran, the log verifies."""
    async with open_log(target.url, **target.options()):
        pass  # the schema exists before the processes race to open it
    summaries = mixers(target)
    ops = sum((Counter(summary["ops"]) for summary in summaries), Counter())
    errors = sum((Counter(summary["errors"]) for summary in summaries), Counter())
    library = sum((Counter(summary["library"]) for summary in summaries), Counter())
    slowest = max(summary["slowest"] for summary in summaries)
    print(f"\n{target.name}: {PROCESSES} processes, {SECONDS:g} s: "
          f"{sum(ops.values())} operations {dict(ops)}; errors {dict(errors)}; "
          f"retries {dict(library)}; slowest removal {slowest:.2f} s")
    for summary in summaries:
        for sample in summary["samples"]:
            print("  ", sample)
    assert {} == dict(errors)
    assert all(ops[kind] > 0 for kind in ("invoke", *REMOVALS)), dict(ops)
    async with open_log(target.url, **target.options()) as log:
        await settle(log)
        assert (await log.verify()).ok
