"""A child process that opens a log when told to, appends once and exits.

    python -m tests.procs.opener URL SCHEMA TENANT

Prints ``ready`` once imported, waits for a line on stdin, then opens the log (bringing
the schema up to date), appends one event and prints the schema revision: several of
these released together race to create the same fresh schema.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import structlog

from eventlog import open_log
from tests.events import Noted


async def main(url: str, schema: str, tenant: str) -> None:
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        await log.append(tenant, "s", [Noted(text=tenant)])
        print(log.schema_revision, flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print("ready", flush=True)
    sys.stdin.readline()
    asyncio.run(main(*sys.argv[1:4]))
