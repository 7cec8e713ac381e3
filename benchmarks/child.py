"""Run one whole-log job in a fresh process and report its time and peak memory as JSON.

``python -m benchmarks.child verify|rebuild SCHEMA``: a process of its own, so the peak
resident set size (``ru_maxrss``) is this job's alone.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

from benchmarks.common import PG_URL, quiet_logs
from eventlog import SpilledViews, open_log
from projections import rebuild


async def job(kind: str, schema: str) -> dict[str, float]:
    async with open_log(PG_URL, schema=schema, upgrade=False) as log:
        await log.wait_readable()
        started = time.perf_counter()
        if kind == "verify":
            report = await log.verify()
            events, ok = report.events, report.ok
        else:
            with SpilledViews() as views:  # as `eventlog replay` and `report` rebuild
                await rebuild(log, into=views)
            events, ok = -1, True  # the caller knows the count from verify
        seconds = time.perf_counter() - started
    return {"events": events, "seconds": seconds, "peak_rss_kb": peak_rss_kb(), "ok": ok}


def peak_rss_kb() -> int:
    """This process's own peak resident set size, in KiB.

    ``ru_maxrss`` will not do on Linux: a child started by vfork (as ``subprocess`` starts
    it) inherits its parent's high-water mark at exec, so every job reported the parent's
    peak (run 7: 123,248 KiB for each). ``VmHWM`` belongs to the process's own memory map.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":
    quiet_logs()
    print(json.dumps(asyncio.run(job(sys.argv[1], sys.argv[2]))))
