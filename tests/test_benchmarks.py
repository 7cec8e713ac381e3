"""The benchmark harness runs end to end on tiny sizes and writes every ratio as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PG_URL, require_postgres

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.examples
def test_quick_run_writes_every_ratio(tmp_path: Path) -> None:
    """`python -m benchmarks --quick --json FILE`: one object per ratio of the goal table."""
    require_postgres()
    out = tmp_path / "ratios.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
        cwd=ROOT, check=False, capture_output=True, text=True, timeout=600,
        env={**os.environ, "EVENTLOG_BENCH_PG": PG_URL},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ratios = json.loads(out.read_text())
    names = " | ".join(ratio["name"] for ratio in ratios)
    for expected in ("append, 1 event", "append_batch", "checkpoint create (~2 KB",
                     "create vs LangGraph", "SQLite checkpoint create, synchronous",
                     "LangGraph SQLite", "synchronous=NORMAL", "tasks on one log",
                     "vs LangGraph aput, its pool", "processes", "read_all",
                     "verify: events/s", "verify: peak RSS", "rebuild: peak RSS",
                     "growth: create", "latest p99", "read p50", "list p99",
                     "WAL B/call: create vs raw_insert", "WAL B/call: aput vs langgraph",
                     "client CPU per create",
                     "PostgreSQL create ÷ LangGraph aput: calls/s",
                     "PostgreSQL aput ÷ LangGraph aput: server CPU",
                     "PostgreSQL aput ÷ LangGraph aput: WAL",
                     "SQLite create ÷ LangGraph aput: client CPU",
                     "SQLite aput ÷ LangGraph aput: calls/s",
                     "tree inclusion at", "appends while the tree",
                     "big state 10 KB SQLite: write MB/s", "big state 10 KB PostgreSQL: read peak",
                     "elements: PostgreSQL thread bytes", "elements: SQLite thread bytes",
                     "console sqlite: first page", "console postgresql: first page"):
        assert expected in names
    for ratio in ratios:
        assert {"name", "baseline", "ratio", "medians", "rounds"} <= set(ratio)
        assert all(len(values) >= 3 for values in ratio["rounds"].values())


def test_a_job_reports_its_own_peak_memory_not_its_parents() -> None:
    """A job process started by a parent holding 300 MiB reports its own peak: on Linux
    ``ru_maxrss`` would report the parent's (a vfork'd child inherits it at exec)."""
    script = (
        "import subprocess, sys\n"
        "held = bytearray(300 * 1024 * 1024)\n"
        "for i in range(0, len(held), 4096): held[i] = 1\n"
        "print(subprocess.run([sys.executable, '-c', 'from benchmarks.child import "
        "peak_rss_kb; print(peak_rss_kb())'], capture_output=True, text=True, "
        "check=True).stdout)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=120)
    assert 0 < int(done.stdout) < 200 * 1024, done.stdout
