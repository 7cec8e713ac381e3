"""A child process appending through a connection that may be cut at any moment.

    python -m tests.procs.cut_writer URL SCHEMA TENANT WRITER COUNT [SECONDS [STOP_FILE]]

Makes COUNT appends (or, with SECONDS, as many as it can in that time, pausing 50 ms after
an error; with STOP_FILE too, until that file exists, SECONDS being only a cap) with
expected version ANY over a few streams shared with the other writers (so
version races and cuts meet), every fourth one attaching a blob (its event names it) and
releasing the one it attached to that stream before (the multi-statement transaction
path). Prints one JSON line per append that returned (``{"ack": text, "event_id": …}``),
one per error a call raised (``{"error": type, "at": time}``), at the end the state of its
connection pool, and how many lost commits the log found had committed
(``commit_outcome_resolved``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path

import structlog
import structlog.testing

from eventlog import EventLogError, content_digest, open_log
from eventlog.storage.postgres import PostgresBackend
from tests.events import Holding


async def main(url: str, schema: str, tenant: str, writer: str, count: int,
               seconds: float, stop_file: Path | None = None) -> None:
    deadline = time.monotonic() + seconds
    async with open_log(url, schema=schema, pool_size=3) as log:
        held: dict[str, bytes] = {}  # the blob this writer attached to each stream last
        for number in itertools.count(1):
            if (seconds and time.monotonic() > deadline) or (not seconds and number > count):
                break
            if stop_file is not None and os.path.exists(stop_file):  # noqa: ASYNC240
                break
            text = f"{writer}:{number}"
            stream = f"s{number % 3}"
            attach: list[bytes] = []
            release: dict[bytes, int] = {}
            if number % 4 == 0:
                blob = text.encode() * 40
                attach, release = [blob], ({held[stream]: 1} if stream in held else {})
            event = Holding(text=text, blobs=[content_digest(blob).hex() for blob in attach],
                            released={digest.hex(): n for digest, n in release.items()})
            try:
                result = await log.append(tenant, stream, [event], attach=attach,
                                          release=release)
            except EventLogError as error:
                print(json.dumps({"error": type(error).__name__, "text": text, "at": time.time(),
                                  "detail": str(error)[:300]}), flush=True)
                if attach:
                    # An append whose outcome is unknown may have released that blob
                    # already: releasing it again would be refused (ReleaseNotHeld).
                    held.pop(stream, None)
                if seconds:
                    await asyncio.sleep(0.05)
                continue
            if attach:
                held[stream] = content_digest(attach[0])
            print(json.dumps({"ack": text, "event_id": str(result.event_ids[0]),
                              "at": time.time()}), flush=True)
        storage = log.storage
        assert isinstance(storage, PostgresBackend)
        assert storage._pool is not None
        pool = storage._pool
        alive = sum(not connection.is_closed() for connection in pool._idle)
        print(json.dumps({"pool_open": pool._open, "pool_idle_alive": alive}), flush=True)


if __name__ == "__main__":
    url, schema, tenant, writer, count, *rest = sys.argv[1:]
    with structlog.testing.capture_logs() as logs:
        asyncio.run(main(url, schema, tenant, writer, int(count), float(rest[0]) if rest else 0,
                         Path(rest[1]) if len(rest) > 1 else None))
    resolved = sum(entry["event"] == "commit_outcome_resolved" for entry in logs)
    print(json.dumps({"resolved_committed": resolved}), flush=True)
