"""A child process appending unfenced (expected version ANY) to a few streams shared with
other processes, every append attaching a blob and releasing the one it attached to that
stream before: each append must check its releases against the head it chains onto.

    python -m tests.procs.release_appender URL SCHEMA TENANT WRITER SECONDS

Prints ``{"ready": true}`` once its log is open, waits for a line on stdin (the go),
appends for SECONDS, then prints ``{"appends": n, "errors": {type: count}, "retries":
[how often each append went round again]}`` (the log's ``append_retried`` events).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections import Counter

import structlog.testing

from eventlog import EventLogError, content_digest, open_log
from tests.events import Holding

STREAMS = 2


async def main(url: str, schema: str, tenant: str, writer: str, seconds: float) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        deadline = time.monotonic() + seconds
        held: dict[str, bytes] = {}
        errors, retries = Counter[str](), []
        for number in itertools.count(1):
            if time.monotonic() > deadline:
                break
            text, stream = f"{writer}:{number}", f"s{number % STREAMS}"
            blob = text.encode() * 40
            release = {held[stream]: 1} if stream in held else {}
            event = Holding(text=text, blobs=[content_digest(blob).hex()],
                            released={digest.hex(): n for digest, n in release.items()})
            with structlog.testing.capture_logs() as logs:
                try:
                    await log.append(tenant, stream, [event], attach=[blob], release=release)
                except EventLogError as error:
                    errors[type(error).__name__] += 1
                    held.pop(stream, None)  # whether it still holds that blob is unknown
                    continue
            held[stream] = content_digest(blob)
            retries.append(sum(entry["event"] == "append_retried" for entry in logs))
        print(json.dumps({"appends": len(retries), "errors": errors, "retries": retries}),
              flush=True)


if __name__ == "__main__":
    url, schema, tenant, writer, seconds = sys.argv[1:]
    asyncio.run(main(url, schema, tenant, writer, float(seconds)))
