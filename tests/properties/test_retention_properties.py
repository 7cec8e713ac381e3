"""Retention against a small model (memory and SQLite): after any policy over any mix of
sessions and threads, every retained checkpoint reads back its own state, every purged one
is reported purged, and what is retained is exactly what the model keeps."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from eventlog import open_log
from eventlog.checkpoints.thread_records import Payload
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.interrupts import START, FakeClock

pytestmark = pytest.mark.properties  # 200 examples each under CI=true: the properties campaign

gaps = st.lists(st.floats(min_value=0.01, max_value=5), min_size=1, max_size=6)
"""Days between one stream's records (each record is written after its gap)."""
layouts = st.lists(st.tuples(st.sampled_from(["session", "thread"]), gaps), min_size=1,
                   max_size=4)
policies = st.one_of(
    st.tuples(st.floats(min_value=0.5, max_value=20), st.none()),
    st.tuples(st.none(), st.integers(min_value=1, max_value=4)),
    st.tuples(st.floats(min_value=0.5, max_value=20), st.integers(min_value=1, max_value=4)),
)


def _kept(times: list[datetime], now: datetime, older_than: float | None,
          keep_latest: int | None) -> list[int]:
    """The model: a record stays if among the latest K or recorded at or after the cutoff
    (in the clock's own microseconds: days as floats would put a record exactly at the
    cutoff on either side of it); if any stays, the latest does."""
    count = len(times)
    cutoff = None if older_than is None else now - timedelta(days=older_than)
    kept = [index for index, time in enumerate(times)
            if (keep_latest is not None and index >= count - keep_latest)
            or (cutoff is not None and time >= cutoff)]
    return kept


async def _check(url: str, layout: list[tuple[str, list[float]]],
                 policy: tuple[float | None, int | None]) -> None:
    clock = FakeClock()
    day = 0.0
    streams: list[tuple[str, str, list[datetime]]] = []
    async with open_log(url, clock=clock) as log:
        for number, (kind, stream_gaps) in enumerate(layout):
            name, times = f"{kind[0]}{number}", []
            for index, gap in enumerate(stream_gaps):
                day += gap
                clock.now = START + timedelta(days=day)
                times.append(clock.now)
                state = {"stream": name, "n": index}
                if kind == "session":
                    await log.checkpoints.create(record(name, state, checkpoint_id=f"{index:02d}"))
                else:
                    await log.threads.put("t", name, f"{index:02d}", state=Payload(
                        "json", f'{{"stream": "{name}", "n": {index}}}'.encode()))
            streams.append((kind, name, times))
        older_than, keep_latest = policy
        report = await log.retention.apply("t", older_than=older_than, keep_latest=keep_latest)
        purged = {(item.kind, item.id): set(item.checkpoints) for item in report.purged}
        for kind, name, times in streams:
            expected = {f"{index:02d}"
                        for index in _kept(times, clock.now, older_than, keep_latest)}
            everything = {f"{index:02d}" for index in range(len(times))}
            got = await _retained(log, kind, name)
            assert (expected, everything - expected) == (
                set(got), purged.get((kind, name), set()))
            for checkpoint_id, state in got.items():
                assert {"stream": name, "n": int(checkpoint_id)} == state
        assert (await log.verify()).ok


async def _retained(log: Any, kind: str, name: str) -> dict[str, Any]:
    """Each retained checkpoint's state, read back."""
    if kind == "session":
        records = await log.checkpoints.list("t", name)
        return {r.checkpoint_id: await log.checkpoints.read("t", name, r.checkpoint_id)
                for r in records}
    import json

    found = await log.threads.page("t", name)
    return {c.checkpoint_id: json.loads(c.state.data) for c in found}


@given(layout=layouts, policy=policies)
@example(layout=[("session", [0.01, 1.0])], policy=(1.0, None))  # a record at the cutoff
def test_memory_retention_matches_the_model(layout: list[tuple[str, list[float]]],
                                            policy: tuple[float | None, int | None]) -> None:
    """See the module docstring (memory)."""
    asyncio.run(_check("memory://", layout, policy))


@given(layout=layouts, policy=policies)
def test_sqlite_retention_matches_the_model(layout: list[tuple[str, list[float]]],
                                            policy: tuple[float | None, int | None]) -> None:
    """See the module docstring (a SQLite file per example)."""
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(_check(f"sqlite:///{Path(directory) / 'log.db'}", layout, policy))
