"""A child process putting thread checkpoints unfenced (expected version ANY, what
LangGraph's ``aput`` does) on one thread that other processes put to at the same time.

    python -m tests.procs.any_putter URL SCHEMA TENANT THREAD WRITER SECONDS

Prints ``{"ready": true}`` once its log is open, waits for a line on stdin (the go), puts
for SECONDS, then prints ``{"puts": n, "errors": {type: count}}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections import Counter

import structlog

from eventlog import EventLogError, open_log
from eventlog.checkpoints.thread_records import Payload


async def main(url: str, schema: str, tenant: str, thread: str, writer: str,
               seconds: float) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        threads = log.checkpoints.threads
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        deadline = time.monotonic() + seconds
        puts, errors = 0, Counter[str]()
        while time.monotonic() < deadline:
            try:
                await threads.put(tenant, thread, f"{writer}-{puts}",
                                  state=Payload("json", b'{"n": %d}' % puts))
            except EventLogError as error:
                errors[type(error).__name__] += 1
                continue
            puts += 1
        print(json.dumps({"puts": puts, "errors": errors}), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    url, schema, tenant, thread, writer, seconds = sys.argv[1:]
    asyncio.run(main(url, schema, tenant, thread, writer, float(seconds)))
