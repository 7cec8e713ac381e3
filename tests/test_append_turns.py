"""Single appends to one stream from one process take turns (`Appender.turn`) instead of
racing for the next version: concurrent creates of one session no longer lose races and
fall back on the stream's lock, on every backend, behind PgBouncer and on Citus; other
streams do not wait; a hold's own appends do not queue behind it; nothing is left
behind."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from eventlog import CheckpointRecord, EventLog
from eventlog.testing.events import Noted
from tests.conftest import CITUS, PGBOUNCER, BackendTarget


def _spied(log: EventLog) -> dict[str, int]:
    """Counts of the storage's appends and of its fallback at the stream's head."""
    storage: Any = log.storage
    calls = {"append": 0, "append_at_head": 0}
    for name in calls:
        original = getattr(storage, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> Any:
            calls[_name] += 1
            return _original(*args)

        setattr(storage, name, spy)
    return calls


def _record(step: int, session: str = "s") -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.UUID(int=1),
                            step=step, state={"step": step})


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", PGBOUNCER, CITUS],
                         indirect=True)
async def test_concurrent_appends_to_one_stream_take_turns(target: BackendTarget) -> None:
    """Ten rounds of eight concurrent creates of one session: 80 appends, each chained
    onto the head the one before it left, none lost a race (no fallback, no append
    sent twice); every record is there in step order of its round, and the log verifies."""
    async with target.open() as log:
        calls = _spied(log)
        for round_ in range(10):
            await asyncio.gather(*[log.checkpoints.create(_record(round_ * 8 + n))
                                   for n in range(8)])
        assert calls == {"append": 80, "append_at_head": 0}
        records = await log.checkpoints.list("t", "s")
        assert sorted(r.step for r in records) == list(range(80))
        assert (await log.verify()).ok
        assert log._appender._turns == {}


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_another_stream_does_not_wait_for_a_turn(target: BackendTarget) -> None:
    """While one stream's turn is taken (held open here), an append to another stream
    commits; the held stream's next append waits until the turn is given back."""
    async with target.open() as log:
        appender = log._appender
        async with appender.turn("t", "busy"):
            await asyncio.wait_for(log.append("t", "free", [Noted(text="a")]), 10)
            waiting = asyncio.create_task(log.append("t", "busy", [Noted(text="b")]))
            await asyncio.sleep(0.2)
            assert not waiting.done()
        result = await asyncio.wait_for(waiting, 10)
        assert result.version == 1
        assert appender._turns == {}


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_hold_appends_without_queueing_behind_itself(target: BackendTarget) -> None:
    """A task holding a stream (`hold_stream`) appends inside its hold while another
    task's append to that stream waits: the hold's appends do not take a turn, so
    neither waits for the other forever; both land, the hold's first."""
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="first")])
        held = asyncio.Event()

        async def outside() -> None:
            # Started before the hold (a task made inside would share its context, and
            # only the holding task may use the log inside: `EventLog.hold_stream`).
            await held.wait()
            await log.append("t", "s", [Noted(text="outside")])

        other = asyncio.create_task(outside())
        async with log.hold_stream("t", "s"):
            held.set()
            await asyncio.sleep(0.1)  # the other task now waits for the stream
            await asyncio.wait_for(log.append("t", "s", [Noted(text="held")]), 10)
        await asyncio.wait_for(other, 30)
        texts = [e.event.text async for e in log.read_stream("t", "s")]  # type: ignore[attr-defined]
        assert texts == ["first", "held", "outside"]
