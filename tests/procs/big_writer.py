"""A child process that writes two big values, to be killed while writing the second.

    python -m tests.procs.big_writer URL SCHEMA KIND SIZE

KIND is ``checkpoints`` (a session state), ``threads`` (a LangGraph-shaped thread put
whose one channel holds the value) or ``writes`` (a pending write of the value). Writes
value 0, then value 2 timed, and prints ``{"took": seconds}``; then prints
``{"writing": 1}`` and writes value 1. `value` gives the bytes of each, so the parent
knows what a complete write holds.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid

from eventlog import CheckpointRecord, open_log
from eventlog.checkpoints.thread_records import ChannelValue, Payload
from eventlog.face import OpenLog

TENANT = "big"
RUN = uuid.UUID(int=7)


def value(kind: str, number: int, size: int) -> bytes:
    """The bytes of value ``number`` (incompressible, the same in every process)."""
    return random.Random(f"{kind}-{number}").randbytes(size)


async def write(log: OpenLog, kind: str, number: int, data: bytes) -> None:
    threads = log.threads
    if kind == "checkpoints":
        await log.checkpoints.create(CheckpointRecord(
            tenant_id=TENANT, session_id="s", run_id=RUN, checkpoint_id=f"c{number}",
            step=number, state=data))
    elif kind == "threads":
        await threads.put(TENANT, "t", f"c{number}", state=Payload("json", b"{}"),
                          channels={"big": ChannelValue(f"v{number}", Payload("bytes", data))})
    else:
        await threads.put(TENANT, "t", f"c{number}", state=Payload("json", b"{}"))
        await threads.put_writes(TENANT, "t", f"c{number}", "task", [(0, "big",
                                 Payload("bytes", data))])


async def main(url: str, schema: str, kind: str, size: int) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, max_payload_bytes=size, **options) as log:
        await write(log, kind, 0, value(kind, 0, size))
        warm = value(kind, 2, size)
        started = time.perf_counter()  # a warm write: what the killed one will take
        await write(log, kind, 2, warm)
        print(json.dumps({"took": time.perf_counter() - started}), flush=True)
        data = value(kind, 1, size)
        print(json.dumps({"writing": 1}), flush=True)
        await write(log, kind, 1, data)
        print(json.dumps({"done": 1}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
