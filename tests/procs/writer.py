"""A child process that appends to a log and reports every append it was told succeeded.

    python -m tests.procs.writer URL SCHEMA TENANT STREAMS COUNT [BLOB_EVERY]

Appends COUNT single-event appends (forever when COUNT is 0) with expected version ANY,
cycling over the comma-separated STREAMS, and prints one JSON line per successful append
(``{"stream", "version", "event_id"}``), flushed at once, so a parent that kills this
process knows exactly which appends returned. Every BLOB_EVERY-th append attaches a blob
(its event names it) and releases the one its stream held before, so crashes also land
inside blob bookkeeping.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sys

import structlog

from eventlog import content_digest, open_log
from tests.events import Holding


async def main(url: str, schema: str, tenant: str, streams: list[str], count: int,
               blob_every: int) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        print(json.dumps({"ready": True}), flush=True)
        held: dict[str, bytes] = {}  # the blob each stream holds
        numbers = itertools.count(1) if count == 0 else iter(range(1, count + 1))
        for number in numbers:
            stream = streams[number % len(streams)]
            attach, release = [], {}
            if blob_every and number % blob_every == 0:
                blob = f"{tenant}-{os.getpid()}-{number}".encode() * 50
                attach = [blob]
                release = {held[stream]: 1} if stream in held else {}
                held[stream] = content_digest(blob)
            event = Holding(text=f"{tenant}:{number}", number=number,
                            blobs=[content_digest(blob).hex() for blob in attach],
                            released={digest.hex(): n for digest, n in release.items()})
            result = await log.append(tenant, stream, [event], attach=attach, release=release)
            print(json.dumps({"stream": stream, "version": result.version,
                              "event_id": str(result.event_ids[0])}), flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    url, schema, tenant, streams, count, *rest = sys.argv[1:]
    asyncio.run(main(url, schema, tenant, streams.split(","), int(count),
                     int(rest[0]) if rest else 0))
