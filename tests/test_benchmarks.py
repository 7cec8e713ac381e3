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
TIMES = "\N{MULTIPLICATION SIGN}"


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
                     "console sqlite: first page", "console postgresql: first page",
                     "steps chat SQLite: aput pages per commit",
                     "steps chat PostgreSQL: aput WAL bytes"):
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


def test_steps_benchmark_prints_every_figure(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`benchmarks.bench_steps` on a 3-step chat thread: LangGraph's runtime makes the calls
    the shape implies, and every count, rate and ratio of issue 41 is printed, sane."""
    require_postgres()
    monkeypatch.setenv("EVENTLOG_BENCH_WAL_PG", PG_URL)  # no private cluster: seconds
    import asyncio

    from benchmarks.bench_steps import StepResults, measure

    results = StepResults()
    asyncio.run(measure(results, 3, 1, shapes=("chat",)))
    out = capsys.readouterr().out
    assert out.count("ours 5 aput, 4 aput_writes; LangGraph 5 aput, 4 aput_writes") == 2
    figures = {(line[:45].strip(), line[45:58].strip()): line[58:].split()
               for line in out.splitlines() if line.startswith("    ") and TIMES in line}
    for backend_figure in ("b-trees written (median; page 1 apart)", "pages per commit",
                           "relations written (median)", "WAL bytes"):
        for kind in ("aput", "aput_writes"):
            ours, theirs, ratio = figures[backend_figure, kind]
            assert float(ours.replace(",", "")) > 0
            assert float(theirs.replace(",", "")) > 0
            assert ratio.endswith(TIMES)
    # Where each call's pages and WAL bytes went: ours and LangGraph's, both kinds.
    for heading, table in (("pages by b-tree", "sqlite_autoindex_events_1"),
                           ("WAL bytes by relation", "events_stream_version_key")):
        listing = out.split(heading, 1)[1].split("\n\n", 1)[0]
        for who in ("ours aput:", "ours aput_writes:", "LangGraph aput:",
                    "LangGraph aput_writes:"):
            assert who in listing, listing
        assert table in listing.split("ours aput_writes:")[1], listing
    names = [ratio.name for ratio in results.ratios]
    for expected in ("steps chat SQLite: step calls/s, all steps",
                     "steps chat SQLite: client CPU µs/step, all steps",
                     "steps chat SQLite: ours aput CPU, last 50 ÷ first 50",
                     "steps chat PostgreSQL: aput WAL bytes",
                     "steps chat PostgreSQL: step calls/s, steps 1-50",
                     "steps chat PostgreSQL: client CPU µs/step, steps 1-50"):
        assert expected in names
    assert all(ratio.ratio > 0 for ratio in results.ratios)
