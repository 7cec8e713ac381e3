"""Memory peaks measured where only the code under test allocates.

A `tracemalloc` peak taken inside a long test session is not the code's alone: threads that
earlier tests left running allocate while it is traced, and CPython's free lists (up to
2,000 tuples of each small size, dictionaries, lists) hand out memory tracemalloc never
sees, or sees only once they are empty, depending on everything that ran before. verify's
flatness test failed that way in a full run (4,000 blobs: 243 KB with the free list full,
431 KB when its first tuples were traced; 16,000 blobs: 446 KB), and passed alone. So each
measurement here runs in a fresh interpreter of its own, is taken after a warm-up run (the
one-time costs of a first call are out of both sizes), and is judged against a yardstick
measured in the same child: the bytes that holding the extra items in a dictionary would
take, which is what a regression to in-memory counts costs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_of(call: object) -> int:
    """The peak bytes Python allocates while ``call()`` runs (a synchronous callable)."""
    assert callable(call)
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def dictionary_yardstick(items: int) -> int:
    """Peak bytes of a Counter holding ``items`` distinct 32-byte digests: what a scan that
    kept one count per item in memory would hold for them."""
    def hold() -> None:
        counts: Counter[bytes] = Counter()
        for number in range(items):
            counts[number.to_bytes(32, "big")] += 1
    return peak_of(hold)


def in_child(function: str, timeout: float = 300) -> dict[str, int]:
    """Run ``module:function`` (a coroutine function returning a dict of ints) alone in a
    fresh interpreter and return what it returned."""
    module, name = function.split(":")
    code = ("import asyncio, importlib, json; "
            f"print(json.dumps(asyncio.run(getattr(importlib.import_module({module!r}), "
            f"{name!r})())))")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=timeout, check=False)
    assert 0 == done.returncode, done.stderr
    result: dict[str, int] = json.loads(done.stdout.splitlines()[-1])
    return result
