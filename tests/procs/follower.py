"""A durable consumer in a process of its own, for the wake-up delay tests: it subscribes
to a log from its end with a long poll interval, prints ``ready`` (and whether it is
pushed), then for each event prints how long after the writer's clock reading (the
event's text, seconds since the epoch) it was delivered, until ``count`` events.

    python -m tests.procs.follower URL SCHEMA POLL COUNT
"""

from __future__ import annotations

import asyncio
import sys
import time

from eventlog import open_log
from tests.events import Noted


async def main(url: str, schema: str, poll: float, count: int) -> None:
    async with open_log(url, schema=schema) as log, log.subscribe(
            "follower", poll_interval=poll, start="end") as sub:
        print("ready", sub.pushed, flush=True)
        seen = 0
        while seen < count:
            for event in await sub.next_batch(10):
                assert isinstance(event.event, Noted)
                print(f"{time.time() - float(event.event.text):.6f}", flush=True)
                seen += 1
            await sub.ack(event)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])))
