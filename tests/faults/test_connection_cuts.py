"""The network between the library and PostgreSQL cut at the worst instants, 8 writers.

A proxy of ours (`tests.faults.pgproxy`) sits between eight writer processes and the
server and cuts connections just before an append's statement, in the middle of it (the
insert ran, the commit never came), or right after it committed but before the reply.
Afterwards every acknowledged append is in the log exactly once, nothing is there twice,
the pools hold only live connections, the chains verify and the views equal a rebuild.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from eventlog import open_log
from projections import compare_views
from tests.conftest import PG_URL
from tests.events import Noted
from tests.faults.pgproxy import MODES, CutPlan, PgProxy
from tests.procs.settle import settle

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.faults]

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 8
APPENDS = 60


def start_writer(url: str, schema: str, number: int) -> subprocess.Popen[str]:
    """One writer process making APPENDS appends through ``url``."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.procs.cut_writer", url, schema, "cut", f"w{number}",
         str(APPENDS)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
        stdout=subprocess.PIPE,
    )


def run_writers(url: str, schema: str) -> list[dict[str, Any]]:
    """Run the writers to the end; every line they printed."""
    processes = [start_writer(url, schema, number) for number in range(WRITERS)]
    lines: list[dict[str, Any]] = []
    for process in processes:
        output, _ = process.communicate(timeout=300)
        assert 0 == process.returncode, output[-2000:]
        lines.extend(json.loads(line) for line in output.splitlines())
    return lines


@pytest.mark.parametrize("mode", MODES)
async def test_cut_connections_lose_nothing_and_duplicate_nothing(
    pg_schema: str, mode: str
) -> None:
    """Cuts at one instant under 8 writers: acknowledged appends stored once, all healthy."""
    upstream = urlsplit(PG_URL)
    async with open_log(PG_URL, schema=pg_schema):
        pass  # the schema exists before the writers race to open it
    with PgProxy((upstream.hostname or "127.0.0.1", upstream.port or 5432)) as proxy:
        proxy.plan = CutPlan(mode, probability=0.15, budget=40, seed=hash(mode) & 0xFFFF)
        lines = await asyncio.to_thread(run_writers, proxy.url(PG_URL), pg_schema)
        cuts = proxy.plan.cuts
    acked = [line for line in lines if "ack" in line]
    errors = [line for line in lines if "error" in line]
    pools = [line for line in lines if "pool_open" in line]
    resolved = sum(line.get("resolved_committed", 0) for line in lines)
    print(f"{mode}: {cuts} cuts, {len(acked)} acknowledged, {resolved} lost commits found "
          f"committed, errors {dict(Counter(e['error'] for e in errors))}")
    assert cuts >= 10
    # The proxy cut where it says: only a cut after the commit leaves a commit to find.
    assert (resolved > 0) == (mode == "after")
    assert [] == errors
    assert WRITERS == len(pools)
    assert all(pool["pool_open"] == pool["pool_idle_alive"] for pool in pools), pools
    async with open_log(PG_URL, schema=pg_schema) as log:
        await settle(log)
        texts: list[str] = []
        ids: set[str] = set()
        assert Noted  # registers test.noted for decoding
        for stream in ("s0", "s1", "s2"):
            events = [event async for event in log.read_stream("cut", stream)]
            assert list(range(1, len(events) + 1)) == [event.version for event in events]
            texts += [event.event.text for event in events]  # type: ignore[attr-defined]
            ids |= {str(event.event_id) for event in events}
        assert {} == {text: n for text, n in Counter(texts).items() if n > 1}
        assert set() == {line["event_id"] for line in acked} - ids
        report = await log.verify()
        assert ([], []) == (report.problems, await compare_views(log))
        refs = await log.storage.blob_refs("cut")
        assert set() == set(refs.values()) - {1}
