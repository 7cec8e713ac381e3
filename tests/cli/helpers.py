"""Helpers for the command's tests: running ``main`` in-process, a story to look at."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from eventlog import EventLog, open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import main
from eventlog.interrupts import Finish, Interrupt, Operation, Resume, ResumeInput
from eventlog.records import RecordedEvent
from tests.conftest import BackendTarget, fresh_id
from tests.procs.settle import settle

START = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
TRIP = Operation("trip", "1")


class TickingClock:
    """A fake clock that moves one second each time it is read (times never tie)."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def advance(self, **delta: float) -> None:
        """Jump forward by ``timedelta(**delta)``."""
        self.now += timedelta(**delta)


@dataclass
class Ran:
    """What one ``main([...])`` call returned and printed."""

    status: int
    out: str
    err: str

    def json(self) -> Any:
        """Standard output as one JSON document."""
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        """Standard output as JSON Lines."""
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


Run = Callable[..., Ran]


def url_args(target: BackendTarget) -> list[str]:
    """The ``--url`` (and ``--schema``) options naming ``target``."""
    args = ["--url", target.url]
    return [*args, "--schema", target.schema] if target.name == "postgresql" else args


def make_runner(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    """A function running ``eventlog ARGS --url <target>`` in-process."""

    def run(*args: str, url: bool = True) -> Ran:
        capsys.readouterr()
        status = main([*args, *(url_args(target) if url else [])])
        captured = capsys.readouterr()
        return Ran(status, captured.out, captured.err)

    return run


@dataclass
class Story:
    """What `seed` wrote: ids, and the positions of the events that matter."""

    tenant: str
    session: str
    other_tenant: str
    batch_id: str = ""
    positions: dict[str, int] = field(default_factory=dict)


async def seed(target: BackendTarget, clock: TickingClock | None = None) -> Story:
    """A session with two runs (one replayed step), an approval batch claimed twice (the
    first lease ran out), a rejected second answer, a stale finish, one effect, a capture
    and a finish; and another tenant using the same session id."""
    clock = clock or TickingClock()
    story = Story(tenant=fresh_id("tenant"), session=fresh_id("session"),
                  other_tenant=fresh_id("other"))
    async with open_log(target.url, clock=clock, **target.options()) as log:
        approval = await _checkpoints(log, story)
        await _approval(log, story, approval, clock)
        await log.checkpoints.create(CheckpointRecord(
            tenant_id=story.other_tenant, session_id=story.session, run_id=uuid.uuid4(),
            checkpoint_id="c0", state={"other": True}))
        await settle(log)
    return story


async def _checkpoints(log: EventLog, story: Story) -> str:
    run_1, run_2 = uuid.uuid4(), uuid.uuid4()

    async def write(label: str, run: uuid.UUID, step: int, checkpoint_id: str,
                    parent: str | None) -> CheckpointRecord:
        record = await log.checkpoints.create(CheckpointRecord(
            tenant_id=story.tenant, session_id=story.session, run_id=run,
            checkpoint_id=checkpoint_id, parent_id=parent, step=step,
            state={"step": step}))
        assert record.position is not None
        story.positions[label] = record.position
        return record

    await write("c0", run_1, 0, "c0", None)
    await write("c1", run_1, 1, "c1", "c0")
    await write("c2", run_1, 2, "c2", "c1")
    await write("c2 again", run_2, 2, "c2", "c1")
    approval = await write("c3", run_2, 3, "c3", "c2")
    assert approval.checkpoint_id is not None
    return approval.checkpoint_id


async def _approval(log: EventLog, story: Story, checkpoint_id: str, clock: TickingClock) -> None:
    batch = await log.interrupts.create(
        story.tenant, story.session, [Interrupt(id="ok", reason="confirmation")],
        checkpoint_id, operation=TRIP)
    story.batch_id = batch.batch_id
    answer = ResumeInput(thread_id=story.session, batch_id=batch.batch_id,
                         responses=[Resume(interrupt_id="ok", status="resolved",
                                           payload={"approved": True})])
    first = await log.interrupts.try_claim(story.tenant, answer)
    assert first.claim is not None
    story.positions["claim 1"] = await _batch_head(log, story)
    assert (await log.interrupts.try_claim(story.tenant, answer)).claim is None
    clock.advance(minutes=10)
    second = await log.interrupts.try_claim(story.tenant, answer)
    assert second.claim is not None
    assert not await log.interrupts.finish(first.claim, Finish.FINALIZE)
    capture = await log.interrupts.start_capture(second.claim)
    assert capture is not None
    assert await log.interrupts.try_start_effect(second.claim)
    assert await log.interrupts.complete_capture(capture, "completed", "done")
    assert await log.interrupts.finish(second.claim, Finish.FINALIZE)
    story.positions["finalized"] = await _batch_head(log, story)


async def _batch_head(log: EventLog, story: Story) -> int:
    inspection = await log.interrupts.inspect([story.tenant], story.batch_id, limit=100)
    assert inspection is not None
    return inspection.audit[-1].position


def seed_story(target: BackendTarget) -> Story:
    """`seed` with a ticking clock, from a synchronous test."""
    return asyncio.run(seed(target, TickingClock()))


async def tenant_events(target: BackendTarget, tenant: str) -> list[RecordedEvent]:
    """Every event of ``tenant`` in log order."""
    async with open_log(target.url, upgrade=False, **target.options()) as log:
        await settle(log)
        events: list[RecordedEvent] = []
        cursor: str | None = None
        while True:
            page = await log.read_all(after=cursor, limit=1000, tenant_id=tenant)
            if not page.events:
                return events
            events.extend(page.events)
            cursor = page.cursor
