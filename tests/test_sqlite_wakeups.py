"""Pushed wake-ups on SQLite (issue 42 §6): a consumer in another process is woken when
the database or its WAL file changes (inotify where the kernel has it, else a stat of
both every `FileListener.STAT_INTERVAL`), so another process's event arrives long before
a 5 s poll; the poll stays as the fallback."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog import EventLog, open_log
from eventlog.storage import filewatch
from tests.events import Noted

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
POLL = 5.0


def follower(url: str, count: int) -> subprocess.Popen[str]:
    """`tests.procs.follower` on ``url``: a consumer process with a ``POLL`` s poll."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.procs.follower", url, "eventlog", str(POLL),
         str(count)], cwd=ROOT, env=ENV, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


async def delays_to_another_process(url: str, count: int) -> tuple[bool, list[float]]:
    """Whether the follower process was pushed, and each event's delay from this
    process's append to its delivery there (events ~0.3 s apart, off the poll's beat)."""
    process = follower(url, count)
    assert process.stdout is not None
    try:
        ready = await asyncio.to_thread(process.stdout.readline)
        assert ready.startswith("ready"), process.stderr.read() if process.stderr else ""
        async with open_log(url) as writer:
            for number in range(count):
                await asyncio.sleep(0.25 + 0.05 * (number % 3))
                await writer.append("t", "s", [Noted(text=f"{time.time():.6f}")])
        out, err = await asyncio.to_thread(process.communicate, timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert 0 == process.returncode, err
    return ready.split()[1] == "True", [float(line) for line in out.split()]


@pytest.mark.slow
def test_another_process_s_event_arrives_well_before_the_poll(tmp_path: Path) -> None:
    """A consumer in a process of its own, a writer in this one, a 5 s poll interval: the
    median delivery delay is a small fraction of the poll (it was 4.0 s)."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    asyncio.run(_created(url))
    pushed, found = asyncio.run(delays_to_another_process(url, 12))
    median = statistics.median(found)
    print(f"median delivery delay to another process with a {POLL:g} s poll: "
          f"{median * 1000:.1f} ms (max {max(found) * 1000:.1f} ms)")
    assert (True, 12) == (pushed, len(found))
    assert median < POLL / 10


async def _created(url: str) -> None:
    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="0")])


async def delays(writer: EventLog, reader: EventLog, count: int) -> tuple[bool, list[float]]:
    """Seconds from each append (by ``writer``, another log object on the file, sharing
    nothing in-process with ``reader``) to its delivery to ``reader``'s consumer."""
    found: list[float] = []
    async with reader.subscribe("pushed", poll_interval=POLL, start="end") as sub:
        for number in range(count):
            waiting = asyncio.create_task(sub.next_batch(1))
            await asyncio.sleep(0.05)
            began = time.monotonic()
            await writer.append("t", "s", [Noted(text=str(number))])
            await asyncio.wait_for(waiting, 30)
            found.append(time.monotonic() - began)
        return sub.pushed, found


@pytest.mark.parametrize("watch", ["inotify", "stat"])
async def test_another_log_s_event_wakes_the_consumer(
        tmp_path: Path, watch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two log objects on one file (as two processes would be): each of 5 events reaches
    the other's consumer well before the 5 s poll, by either watch."""
    if watch == "stat":
        monkeypatch.setattr(filewatch, "inotify_available", lambda: False)
    elif not filewatch.inotify_available():
        pytest.skip("no inotify here")
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url) as writer, open_log(url) as reader:
        pushed, found = await delays(writer, reader, 5)
    assert (True, 5) == (pushed, len(found))
    assert max(found) < POLL / 2


async def test_a_follower_of_another_log_is_woken_too(tmp_path: Path) -> None:
    """``log.watch()`` (``eventlog log --follow``) is woken by another log's append."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url) as writer, open_log(url) as reader, reader.watch() as watch:
        watch.clear()
        began = time.monotonic()
        waiting = asyncio.create_task(watch.wait(POLL))
        await asyncio.sleep(0.05)
        await writer.append("t", "s", [Noted(text="x")])
        await asyncio.wait_for(waiting, 30)
    assert time.monotonic() - began < POLL / 2


async def test_a_log_on_an_in_memory_database_polls(tmp_path: Path) -> None:
    """No file, nothing to watch: a subscription on an application's in-memory SQLite
    engine polls, as before."""
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    try:
        async with open_log(engine) as log, log.subscribe("p", poll_interval=0.1) as sub:
            assert not sub.pushed
    finally:
        await engine.dispose()
