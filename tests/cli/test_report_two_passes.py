"""A tenant's (or the whole log's) report reads in two passes: every session tallied,
then only the drawn sessions' events kept, the same events, in the same order, that one
pass keeping everything gave; undrawn sessions' events are never held."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from eventlog import EventLog, open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli.report import collect
from eventlog.cli.report.index import tally
from eventlog.interrupts import Interrupt, Operation
from eventlog.records import RecordedEvent
from tests.events import Noted

RUN = uuid.UUID("00000000-0000-4000-8000-000000000021")
OPERATION = Operation("op", "1")


async def build(log: EventLog) -> None:
    """Two tenants, five sessions interleaved, a batch on one, and an event of no session."""
    for step in range(4):
        for number in range(5):
            tenant = "t" if number < 4 else "u"
            created = await log.checkpoints.create(CheckpointRecord(
                tenant_id=tenant, session_id=f"s{number}", run_id=RUN, step=step,
                state={"step": step}))
            if (step, number) == (1, 2):
                assert created.checkpoint_id is not None
                await log.interrupts.create("t", "s2", [Interrupt(id="ok", reason="go?")],
                                            created.checkpoint_id, operation=OPERATION)
        await log.append("t", "loose", [Noted(text="no session")])


async def grouped(log: EventLog, tenant: str | None, as_of: int | None
                  ) -> dict[tuple[str, str], list[RecordedEvent]]:
    """Every session's events in one pass (what the report held before)."""
    sessions: dict[tuple[str, str], list[RecordedEvent]] = {}
    owner: dict[tuple[str, str], tuple[str, str]] = {}
    async for event in _all(log, tenant):
        key = collect._session_of(event, owner)
        if key is not None and collect.before(event, as_of):
            sessions.setdefault(key, []).append(event)
    return sessions


async def _all(log: EventLog, tenant: str | None) -> AsyncIterator[RecordedEvent]:
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=3, tenant_id=tenant)
        if not page.events:
            return
        for event in page.events:
            yield event
        cursor = page.cursor


def positions(events: Sequence[RecordedEvent]) -> list[int]:
    """The events' positions, in order."""
    return [event.position for event in events]


@pytest.mark.parametrize(("tenant", "as_of"), [("t", None), (None, None), ("t", 12)])
async def test_the_drawn_sessions_hold_what_one_pass_held(
    tenant: str | None, as_of: int | None
) -> None:
    """Tallies equal those of the sessions' events, the two drawn sessions' events are
    the same positions in the same order, batch streams and cut at a position included."""
    async with open_log("memory://") as log:
        await build(log)
        whole = await grouped(log, tenant, as_of)
        scan = await collect.scan_sessions(log, tenant, as_of)
        assert {} == scan.sessions  # the first pass keeps no events
        assert list(whole) == list(scan.tallies)
        for key, events in whole.items():
            assert tally(events) == scan.tallies[key]
        keys = collect.latest_sessions(scan, 2)
        assert 2 == len(keys)
        await collect.read_chosen(log, scan, keys)
        assert set(keys) == set(scan.sessions)
        for key in keys:
            assert positions(whole[key]) == positions(scan.sessions[key])
        last = max((e for events in whole.values() for e in events), key=lambda e: e.position)
        assert scan.last is not None
        assert last.position == scan.last.position
