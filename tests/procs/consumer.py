"""A child process holding a durable consumer (or a projection) of a log.

    python -m tests.procs.consumer MODE URL SCHEMA NAME OUT BATCH LEASE [MARKER]

MODE ``consume``: subscribe (waiting for the consumer if another holder has it), write one
JSON line per delivered event to OUT (``{"id", "text", "token", "at"}``, flushed before
the ack), and ack every BATCH-th event; stop after the event whose text is ``end``
(acknowledged). MODE ``project``: run a projection whose handler inserts one row per
event into the table ``own`` beside the log, BATCH events per transaction; the event
whose text is ``crash`` kills the process with SIGKILL right after its row was written,
inside the transaction, unless the file MARKER exists (it is created first); stops once
the event ``end`` is projected. In ``consume`` mode, OUT is created before the
subscription is opened, and once the file MARKER exists the process freezes (blocking)
after the next delivery, until the file ``MARKER.thaw`` exists. Prints
``{"claimed": token}`` when it holds the consumer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import structlog

from eventlog import open_log
from eventlog.records import RecordedEvent
from tests import events as _registered  # noqa: F401 - registers the test event types


async def consume(log: Any, name: str, out: Path, batch: int, lease: float,
                  stall: Path) -> None:
    stalled = False
    out.touch()  # noqa: ASYNC240 - tells the test this holder is about to claim it
    async with log.subscribe(name, poll_interval=0.2, lease=lease, wait=True) as sub:
        print(json.dumps({"claimed": sub.token}), flush=True)
        with out.open("a") as sink:
            count = 0
            async for event in sub:
                text = event.event.text
                sink.write(json.dumps({"id": str(event.event_id), "text": text,
                                       "token": sub.token, "at": time.time()}) + "\n")
                sink.flush()
                if not stalled and stall.name and stall.exists():  # noqa: ASYNC240 - a test
                    stalled = True
                    freeze(stall, lease)
                count += 1
                if count % batch == 0 or text == "end":
                    await sub.ack(event)
                if text == "end":
                    return


def freeze(stall: Path, lease: float) -> None:
    """Freeze the whole process (a blocking sleep, as in a long GC pause) until the file
    ``<stall>.thaw`` exists, or 40 leases."""
    thaw = stall.with_name(stall.name + ".thaw")
    deadline = time.monotonic() + lease * 40
    while not thaw.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


async def project(log: Any, name: str, batch: int, lease: float, marker: Path) -> None:
    postgres = log.backend_name == "postgresql"
    table = f'"{log.storage.schema}_own".own' if postgres else "own"

    async def handler(event: RecordedEvent, connection: Any) -> None:
        text = event.event.text  # type: ignore[attr-defined]
        if postgres:
            await connection.execute(f"INSERT INTO {table} (text) VALUES ($1)", text)
        else:
            await connection.execute(sa.text(f"INSERT INTO {table} (text) VALUES (:t)"),
                                     {"t": text})
        if text == "crash" and not marker.exists():  # noqa: ASYNC240 - a test's marker
            marker.touch()  # noqa: ASYNC240
            os.kill(os.getpid(), signal.SIGKILL)
        if text == "end":
            done.append(True)

    done: list[bool] = []
    print(json.dumps({"claimed": True}), flush=True)
    while not done:
        await log.project(name, handler, batch=batch, lease=lease, wait=True,
                          poll_interval=0.2, until_idle=True)
        await asyncio.sleep(0.1)


async def main(mode: str, url: str, schema: str, name: str, out: str, batch: int,
               lease: float, marker: str) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        if mode == "consume":
            await consume(log, name, Path(out), batch, lease, Path(marker))
        else:
            await project(log, name, batch, lease, Path(marker))


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    mode, url, schema, name, out, batch, lease = sys.argv[1:8]
    asyncio.run(main(mode, url, schema, name, out, int(batch), float(lease),
                     sys.argv[8] if len(sys.argv) > 8 else ""))
