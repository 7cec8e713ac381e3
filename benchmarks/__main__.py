"""Run the benchmarks: ``python -m benchmarks [--quick] [--json FILE] [--only NAME,…]``.

Each section prints its figures next to baselines measured in the same run, as ratios;
a summary of every ratio (with its goal) closes the run, and ``--json`` writes them as a
list of objects (name, baseline, ratio, medians, rounds, unit, goal, met).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path

SECTIONS = ("append", "checkpoints", "sqlite", "concurrency", "reads", "large", "threads",
            "writecost", "writes", "langgraph", "adopt", "fenced", "tree", "telemetry",
            "crypt", "signing", "bigstate",
            "subscriptions", "elements", "statistics", "console", "steps", "fanout")
"""``writecost`` is WAL bytes and client CPU per write, on a private cluster it starts;
``writes`` is issue 30's write table (create and the adapter's ``aput`` beside LangGraph's
``aput`` on PostgreSQL and SQLite: speed, round trips, client and server CPU, WAL);
``langgraph`` is the LangGraph adapter against LangGraph's own saver (its own report,
not in the ratio summary; skipped by ``--quick``); ``adopt`` times adopting 10,000
checkpoints from LangGraph's AsyncPostgresSaver beside a plain ``alist`` of them;
``fenced`` is single-writer mode's puts and writes beside unfenced ones; ``tree`` the
transparency tree's heads and proofs as a tenant grows, and appends while it is kept;
``telemetry`` appends with nobody listening, the OpenTelemetry API alone, and an SDK;
``crypt`` create, ``aput`` and read with a keyring beside without, and the bytes stored;
``signing`` create and ``aput`` signed beside unsigned (issue 40 §1: goal ≥ 0.9), and what
checking signatures costs the hold list and verify;
``bigstate`` one value of 100 KB, 1 MB and 10 MB written and read by our LangGraph saver,
LangGraph's own and the session store, on SQLite and PostgreSQL: MB/s and peak memory as
a multiple of the value;
``subscriptions`` a durable consumer's delivery beside ``read_all`` and the append's
``pg_notify`` beside none.;
``elements`` the bytes of a chat thread (issue 33 §1) with element storage beside LangGraph's
savers and beside whole values, at 50, 100, 150 and 200 steps, and ``aget_tuple``'s time;
``statistics`` thread reads on tables never analyzed and analyzed: a small thread beside a
4,000-step one, and ``aget_tuple`` / ``alist`` beside LangGraph's (issue 41);
``console`` `eventlog serve`'s list pages (first, filtered) in a tenant of 10,000 threads beside
one of 1,000, a 1,000-step thread's page, and ``eventlog timeline`` on it (issue 43);
``steps`` a real compiled graph's ``aput`` and ``aput_writes`` calls (a chat thread of 200
steps, and the small state) on our saver beside LangGraph's, SQLite and PostgreSQL: b-trees,
pages, relations and WAL per call, calls/s, client and server CPU (issue 41; its own table,
its ratios in the summary);
``fanout`` a super-step's parallel writes: five tasks' ``aput_writes`` at once after each
put, our saver beside LangGraph's on SQLite and PostgreSQL (steps/s)."""
ON_REQUEST = ("citus",)
"""Sections run only when ``--only`` names them: ``citus`` needs a Citus cluster."""


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--json", type=Path, help="write every ratio to this file")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: proves the harness runs, measures nothing")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections ({', '.join(SECTIONS)}; "
                        f"on request: {', '.join(ON_REQUEST)})")
    arguments = parser.parse_args()
    if arguments.quick:
        os.environ["EVENTLOG_BENCH_QUICK"] = "1"
    from benchmarks import common

    common.quiet_logs()
    results = common.Results()
    print(f"benchmarks · {common.machine()} · {common.rounds()} interleaved rounds"
          + (" · QUICK (sizes too small to mean anything)" if common.quick() else ""))
    started = time.perf_counter()
    for name in arguments.only.split(","):
        if name not in SECTIONS + ON_REQUEST:
            parser.error(f"unknown section {name!r}")
        module = __import__(f"benchmarks.bench_{name}", fromlist=["run"])
        if hasattr(module, "run"):
            asyncio.run(module.run(results))
        elif not common.quick():
            asyncio.run(module.main())
    results.summary()
    print(f"  ({time.perf_counter() - started:.0f} s in all)")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(results.as_json(), indent=2))


main()
