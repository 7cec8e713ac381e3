"""A child process that opens a log, reports, and holds it open until told to close.

    python -m tests.procs.holder URL

Prints ``open`` (or ``locked <message>`` when the store is locked, then exits), waits for
a line on stdin, closes the log and prints ``closed``.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import structlog

from eventlog import StoreLocked, open_log


async def main(url: str) -> None:
    try:
        async with open_log(url):
            print("open", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
    except StoreLocked as error:
        print(f"locked {error}", flush=True)
        return
    print("closed", flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(sys.argv[1]))
