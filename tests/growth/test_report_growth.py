"""``eventlog report TENANT`` tallies every session and reads only the ones it draws: its
memory does not grow with the events of the scope (it kept every one of them)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK
from eventlog.events.checkpoints import SESSION_STREAM_PREFIX, CheckpointCreated
from eventlog.hashing import content_digest
from tests.growth.rss import measure

pytestmark = pytest.mark.growth

RUN = uuid.UUID("00000000-0000-4000-8000-000000000007")
PER_SESSION = 100


async def build(url: str, sessions: int) -> None:
    """``sessions`` sessions of 100 checkpoints, each event carrying 2 kB of metadata."""
    async with open_log(url) as log:
        for number in range(sessions):
            session = f"s{number:05d}"
            states = [b'{"n": %d}' % (number * PER_SESSION + step) for step in range(PER_SESSION)]
            await log.append("t", SESSION_STREAM_PREFIX + session, [CheckpointCreated(
                session_id=session, run_id=RUN, checkpoint_id=f"c{step}", step=step,
                parent_id=f"c{step - 1}" if step else None,
                state_digest=content_digest(state).hex(), state_encoding="json",
                state_size=len(state), metadata={"note": f"{number} {step} " + "x" * 2000},
            ) for step, state in enumerate(states)], attach=states)


def report_peak(tmp_path: Path, sessions: int) -> float:
    """Peak RSS (MiB) of the tenant's report over ``sessions`` sessions (20 drawn)."""
    url = f"sqlite:///{tmp_path / f'{sessions}.db'}"
    asyncio.run(build(url, sessions))
    page = tmp_path / f"{sessions}.html"
    ran = measure("report", "t", "-o", str(page), "--url", url, "--json", scratch=tmp_path)
    assert EXIT_OK == ran.status, ran.err
    assert 20 == json.loads(ran.out)["sessions"]
    assert page.read_text().count('class="subject"') == sessions
    return ran.peak_mb


def test_report_memory_is_flat_in_the_events_of_the_scope(tmp_path: Path) -> None:
    """4,000 then 32,000 events in 40 then 320 sessions, 20 drawn either way: the peak
    grows by less than 50 MiB, the most of which is the 32 MiB page cache of verify's
    spilled views filling up (it grew with every event of the tenant: by 170 MiB)."""
    small, large = report_peak(tmp_path, 40), report_peak(tmp_path, 320)
    assert large - small < 50, (small, large)
