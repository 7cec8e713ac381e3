"""A child process that reads one encrypted checkpoint again and again, printing each
outcome, until a read is refused as erased (then it tries a write and exits), or for 20 s.

    python -m tests.procs.key_reader URL SCHEMA KEYRING SESSION CHECKPOINT CACHE_SECONDS

(SCHEMA ``-`` for none.)

Prints ``read <monotonic time>`` after each read that opened the state, then
``erased <monotonic time>`` at the first `SubjectErased`, then ``write refused`` or
``write accepted`` for one create to the same session.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
import uuid

import structlog

from eventlog import CheckpointRecord, open_log
from eventlog.errors import SubjectErased


async def main(url: str, schema: str, keyring: str, session: str, checkpoint: str,
               cache: str) -> None:
    options = {} if schema == "-" else {"schema": schema}
    async with open_log(url, keyring=keyring, key_cache_seconds=float(cache),
                        **options) as log:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                await log.checkpoints.read("t", session, checkpoint)
            except SubjectErased:
                print(f"erased {time.monotonic()}", flush=True)
                break
            print(f"read {time.monotonic()}", flush=True)
            await asyncio.sleep(0.05)
        else:
            print("never refused", flush=True)
            return
        try:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=session, run_id=uuid.uuid4(), state={"n": 1}))
        except SubjectErased:
            print("write refused", flush=True)
        else:
            print("write accepted", flush=True)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(*sys.argv[1:7]))
