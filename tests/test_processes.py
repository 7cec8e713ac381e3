"""Real processes: the file store's lock, SIGKILL at random moments, racing appenders."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog, StorageError, StoreLocked, open_log
from projections import ViewQuery, compare_views
from tests.conftest import CITUS, PGBOUNCER, BackendTarget
from tests.events import Noted
from tests.procs.settle import settle

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def child(module: str, *args: str) -> subprocess.Popen[str]:
    """Start ``python -m tests.procs.<module> args`` with pipes for stdin and stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.procs.{module}", *args], cwd=ROOT, env=ENV, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )


def writer(target: BackendTarget, tenant: str, streams: str, count: int,
           blob_every: int = 0) -> subprocess.Popen[str]:
    """A child appending ``count`` events (0: until killed), one JSON line per append."""
    return child("writer", target.url, target.schema, tenant, streams, str(count),
                 str(blob_every))


def acknowledged(output: str) -> list[dict[str, Any]]:
    """The appends a writer reported as returned: its whole lines (a line is written with
    one ``write`` to the pipe, so a kill leaves it whole or absent)."""
    whole = output[: output.rfind("\n") + 1]
    return [line for line in map(json.loads, whole.splitlines()) if "event_id" in line]


def rest_of_output(process: subprocess.Popen[str], timeout: float = 30) -> str:
    """What the child printed that the parent has not read yet, once it has ended.

    Read through ``process.stdout`` itself, never ``communicate()``: once ``readline`` has
    been called, the text wrapper holds read-ahead bytes that ``communicate`` (which reads
    the pipe's descriptor directly) would skip, leaving it to start mid-line."""
    assert process.stdout is not None
    rest = process.stdout.read()
    process.wait(timeout=timeout)
    return rest


# -- the file store's lock ---------------------------------------------------------------

async def test_second_process_gets_store_locked_until_the_first_closes(tmp_path: Path) -> None:
    """While one process holds a file store another gets StoreLocked; after close it opens."""
    url = f"file://{tmp_path / 'store'}"
    holder = child("holder", url)
    assert "open" == holder.stdout.readline().strip()  # type: ignore[union-attr]
    with pytest.raises(StoreLocked) as caught:
        async with open_log(url):
            pass
    holder.stdin.write("close\n")  # type: ignore[union-attr]
    holder.stdin.flush()  # type: ignore[union-attr]
    assert ("closed\n", 0) == (holder.communicate(timeout=30)[0], holder.returncode)
    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="mine now")])
    assert str(tmp_path / "store") == caught.value.path


async def test_process_is_refused_while_this_one_holds_the_store(tmp_path: Path) -> None:
    """The lock works the other way round too: a child is refused with a clear message."""
    url = f"file://{tmp_path / 'store'}"
    async with open_log(url):
        refused = child("holder", url)
        output, _ = refused.communicate(timeout=30)
    assert f"locked file store {str(tmp_path / 'store')!r} is locked by another process\n" == output
    again = child("holder", url)
    assert ("open", "closed\n") == (
        again.stdout.readline().strip(),  # type: ignore[union-attr]
        again.communicate("close\n", timeout=30)[0],
    )


async def test_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    """A holder killed with SIGKILL releases the lock with its process."""
    url = f"file://{tmp_path / 'store'}"
    holder = child("holder", url)
    assert "open" == holder.stdout.readline().strip()  # type: ignore[union-attr]
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    async with open_log(url) as log:
        assert (await log.verify()).ok


# -- SIGKILL at a random moment --------------------------------------------------------------

@pytest.mark.parametrize("target", ["sqlite", "file", "postgresql", PGBOUNCER, CITUS],
                         indirect=True)
async def test_sigkill_mid_append_leaves_a_consistent_log(target: BackendTarget) -> None:
    """Kill -9 a tight append loop three times: every acknowledged append is there, the
    chains verify, the views match the log, versions are dense, blobs are consistent."""
    rng = random.Random()
    acked: list[dict[str, Any]] = []
    for _ in range(3):
        process = writer(target, "crash", "s0,s1,s2", 0, blob_every=2)
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()
        assert '{"ready": true}' == process.stdout.readline().strip()
        seen = "".join(process.stdout.readline() for _ in range(rng.randint(1, 40)))
        await asyncio.sleep(rng.uniform(0, 0.02))
        process.send_signal(signal.SIGKILL)
        acked.extend(acknowledged(seen + rest_of_output(process)))
    async with open_log(target.url, **target.options()) as log:
        await settle(log)
        await assert_consistent(log, "crash", acked)


async def assert_consistent(log: EventLog, tenant: str, acked: list[dict[str, Any]]) -> None:
    """verify ok, views match, dense versions, every acknowledged event stored once."""
    report = await log.verify()
    assert ([], []) == (report.problems, await compare_views(log))
    stored: list[str] = []
    for stream in ("s0", "s1", "s2"):
        events = [event async for event in log.read_stream(tenant, stream)]
        assert list(range(1, len(events) + 1)) == [event.version for event in events]
        stored.extend(str(event.event_id) for event in events)
    assert [] == [n for n in Counter(stored).values() if n != 1]
    assert set() == {line["event_id"] for line in acked} - set(stored)
    refs = await log.storage.blob_refs(tenant)
    assert set() == set(refs.values()) - {1}
    for digest in refs:
        assert await log.get_blob(tenant, digest) is not None


async def test_torn_last_line_of_the_file_store_is_dropped(tmp_path: Path) -> None:
    """An append cut short mid-line never happened: open truncates it and all verifies."""
    url = f"file://{tmp_path / 'store'}"
    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="a")])
    index = tmp_path / "store" / "heads.json"
    closed_index = index.read_bytes()
    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="b")])
    # What a crash half-way through writing the second append leaves: half a line, and
    # the index as the last clean close wrote it.
    events = tmp_path / "store" / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    events.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])
    index.write_bytes(closed_index)
    async with open_log(url) as log:
        versions = [event.version async for event in log.read_stream("t", "s")]
        assert ([1], True, []) == (versions, (await log.verify()).ok, await compare_views(log))
        rows = await log.storage.query(ViewQuery("stream_heads", {"tenant_id": "t"}))
        assert [1] == [row["version"] for row in rows]
        await log.append("t", "s", [Noted(text="b again")], expected_version=1)
    assert events.read_bytes().startswith(lines[0])
    assert 2 == len(events.read_bytes().splitlines())


async def test_failed_file_write_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails (here: fsync raising, as on a full or failing disk) is reported
    and leaves nothing behind: the next append takes the same version, reopening agrees."""
    url = f"file://{tmp_path / 'store'}"
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        monkeypatch.setattr(os, "fsync", real_fsync)
        raise OSError(28, "No space left on device")

    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="a")])
        monkeypatch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(StorageError, match="No space left"):
            await log.append("t", "s", [Noted(text="lost")])
        result = await log.append("t", "s", [Noted(text="b")], expected_version=1)
    async with open_log(url) as log:
        texts = [event.event.text async for event in log.read_stream("t", "s")]  # type: ignore[attr-defined]
        assert (2, ["a", "b"], True) == (result.version, texts, (await log.verify()).ok)


# -- racing appenders ----------------------------------------------------------------------

@pytest.mark.parametrize("target", ["sqlite", "postgresql", PGBOUNCER], indirect=True)
async def test_processes_racing_with_any_lose_and_duplicate_nothing(
    target: BackendTarget,
) -> None:
    """4 processes append with ANY to the same two streams: dense versions, each
    acknowledged event exactly once, verify ok."""
    async with open_log(target.url, **target.options()):
        pass  # create the schema first, so the race is about appends
    processes = [writer(target, "race", "s0,s1", 16) for _ in range(4)]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [0] * 4 == [process.returncode for process in processes]
    acked = [line for output, _ in outputs for line in acknowledged(output)]
    async with open_log(target.url, **target.options()) as log:
        events = {
            stream: [event async for event in log.read_stream("race", stream)]
            for stream in ("s0", "s1")
        }
        assert (True, []) == ((await log.verify()).ok, await compare_views(log))
    assert [32, 32] == [len(events[stream]) for stream in ("s0", "s1")]
    for stream_events in events.values():
        assert list(range(1, 33)) == [event.version for event in stream_events]
    stored = sorted(str(event.event_id) for stream in events.values() for event in stream)
    assert sorted(line["event_id"] for line in acked) == stored
    versions = sorted((line["stream"], line["version"]) for line in acked)
    assert versions == sorted({(s, v) for s in ("s0", "s1") for v in range(1, 33)})
