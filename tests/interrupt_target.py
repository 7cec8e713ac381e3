"""What tests/test_interrupt.py interrupts: a test that passes at once, then tests that
wait long enough to be stopped. Not a test module (no ``test_`` prefix): collected only
when named, and skipped unless ``EVENTLOG_INTERRUPT_TARGET=1``."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("EVENTLOG_INTERRUPT_TARGET") != "1",
                                reason="run only by tests/test_interrupt.py")

WAIT = 120.0


def test_passes_at_once(tmp_path: object) -> None:
    """Done before the interrupt: the summary counts it."""
    print("started", flush=True)


async def test_waits_on_the_event_loop(tmp_path: object) -> None:
    """Interrupted inside asyncio (pytest-asyncio's runner holds SIGINT while it runs)."""
    await asyncio.sleep(WAIT)


def test_waits_in_plain_code(tmp_path: object) -> None:
    """Interrupted outside any event loop."""
    time.sleep(WAIT)
