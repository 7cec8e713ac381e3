"""Running coroutines on an event loop that belongs to someone else.

An async saver is bound to the loop its log's connections live on. Blocking callers on
other threads hand it their coroutines (`run_blocking`); coroutines from another loop are
forwarded the same way (`on_loop`). A blocking call from the loop's own thread would wait
for itself forever, so it is refused with `WrongThread`; one while the loop is not running
would wait forever too (`NotRunning`). `BackgroundLoop` is a private
loop in a daemon thread, for programs that have no loop of their own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from eventlog.errors import NotRunning as NotRunning  # defined with every error
from eventlog.errors import WrongThread as WrongThread

R = TypeVar("R")


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def run_blocking(
    loop: asyncio.AbstractEventLoop | None, coroutine: Coroutine[Any, Any, R], method: str,
    alternative: str,
) -> R:
    """Run ``coroutine`` on ``loop`` from a thread that does not run it, and wait."""
    current = running_loop()
    if loop is None or current is loop or not loop.is_running():
        coroutine.close()
        if current is not None and (current is loop or loop is None):
            raise WrongThread(method, alternative)
        raise NotRunning(method)
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


async def on_loop(
    loop: asyncio.AbstractEventLoop | None, coroutine: Coroutine[Any, Any, R]
) -> R:
    """Await ``coroutine`` on ``loop``: here if it is this loop, else forwarded to it."""
    if loop is None or loop is running_loop() or not loop.is_running():
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


class BackgroundLoop:
    """An event loop running forever in a daemon thread, until `stop`."""

    def __init__(self, name: str = "eventlog-saver") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def stop(self) -> None:
        """Stop the loop, wait for its thread and close it."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
