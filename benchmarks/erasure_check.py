"""The erasure check's cost (issue 40 §2): what the log's erasure record adds when a
subject's key rows are read. Run: ``python -m benchmarks.erasure_check sqlite|postgresql``.

Medians of 5 rounds of 2000 calls each, on one log with a keyring: a read of a subject's
key rows (what the sealer does on a subject's first use and once per key-cache interval),
the erasure check for a live subject and an erased one (followed: only what was appended
since is read), and an erased subject's first read (its stream read and its signature
checked). Seal and open with a cached key make neither call.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from benchmarks.common import PG_URL
from eventlog import CheckpointRecord, open_log
from eventlog.crypto import init_keyring
from eventlog.log._erasures import ErasureLedger


async def _timed(call: Callable[[], Awaitable[Any]], count: int = 2000) -> float:
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            await call()
        rounds.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(rounds)


async def main(backend: str) -> None:
    """Print the four figures (µs per call) for ``backend``."""
    folder = tempfile.mkdtemp()
    ring = init_keyring(os.path.join(folder, "keyring.json"))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    url, options = ((f"sqlite:///{folder}/log.db", {}) if backend == "sqlite"
                    else (PG_URL, {"schema": schema}))
    try:
        async with open_log(url, keyring=ring, **options) as log:
            for session in ("live", "gone"):
                await log.checkpoints.create(CheckpointRecord(
                    tenant_id="t", session_id=session, run_id=uuid.UUID(int=1),
                    state={"a": 1}))
            await log.erase("t", "gone")
            keys = await _timed(lambda: log.storage.subject_keys("t", "live"))
            live = await _timed(lambda: log.erasure_of("t", "live"))
            gone = await _timed(lambda: log.erasure_of("t", "gone"))
            checked = log.signed
            first = await _timed(lambda: ErasureLedger(checked).erasure("t", "gone"), 500)
        print(f"{backend}: key rows read {keys:.0f} µs; erasure check: live subject "
              f"{live:.0f} µs, erased subject followed {gone:.0f} µs, erased subject's "
              f"first read {first:.0f} µs")
    finally:
        if backend != "sqlite":
            connection = await asyncpg.connect(PG_URL)
            await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            await connection.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite"))
