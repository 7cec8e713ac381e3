"""A child process appending checkpoints to one session and one thread while another
process runs retention passes over the same tenant.

    python -m tests.procs.retention_writer URL SCHEMA TENANT SUBJECT PHASE_SECONDS

Prints ``{"ready": true}`` once its log is open and waits for a line on stdin; then writes
alone for PHASE_SECONDS, prints ``{"phase": 1}``, waits for another line (the parent's
passes start), writes for PHASE_SECONDS more, and prints ``{"alone": n, "beside": m,
"written": [...], "errors": {type: count}, "slowest": [s1, s2]}``: each successful
write's id (sessions' ``s-N``, threads' ``t-N``), how many in each phase, the slowest
write of each phase (s). It pauses `PAUSE` between writes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections import Counter

import structlog

from eventlog import CheckpointRecord, EventLogError, open_log
from eventlog.checkpoints.thread_records import Payload

RUN = "018f0000-0000-7000-8000-000000000001"
PAUSE = 0.005
"""Between two writes (an agent's steps are not back to back)."""


async def main(url: str, schema: str, tenant: str, subject: str, seconds: float) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        written: list[str] = []
        errors: Counter[str] = Counter()
        slowest: list[float] = []

        async def phase() -> int:
            slowest.append(0.0)
            count, deadline = 0, time.monotonic() + seconds
            while time.monotonic() < deadline:
                n = len(written)
                name = f"s-{n:06d}" if n % 2 == 0 else f"t-{n:06d}"
                started = time.monotonic()
                try:
                    if n % 2 == 0:
                        await log.checkpoints.create(CheckpointRecord(
                            tenant_id=tenant, session_id=subject, run_id=RUN,
                            checkpoint_id=name, state={"n": n, "pad": "x" * 200}))
                    else:
                        await log.threads.put(tenant, subject, name,
                                              state=Payload("json", b'{"n": %d}' % n))
                except EventLogError as error:
                    errors[type(error).__name__] += 1
                    continue
                slowest[-1] = max(slowest[-1], time.monotonic() - started)
                written.append(name)
                count += 1
                await asyncio.sleep(PAUSE)
            return count

        alone = await phase()
        print(json.dumps({"phase": 1}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        beside = await phase()
        print(json.dumps({"alone": alone, "beside": beside, "written": written,
                          "errors": errors, "slowest": slowest}), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    url, schema, tenant, subject, seconds = sys.argv[1:]
    asyncio.run(main(url, schema, tenant, subject, float(seconds)))
