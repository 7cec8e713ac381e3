"""Tasks' writes waiting for one thread are appended together
(`eventlog.checkpoints.write_batches`): every backend, behind PgBouncer and on Citus; never
across actors or sealing subjects; a batch the log refuses is appended write by write, so
each caller gets its own answer; a caller cancelled while queued is left out, one cancelled
while its batch commits does not take the others' writes with it; inside a hold a write
appends by itself."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from eventlog import EventLog, PayloadTooLarge, open_log
from eventlog.checkpoints import Payload
from tests.conftest import CITUS, PGBOUNCER, BackendTarget

T, TH, C = "t", "th", "c1"


def _spied(log: EventLog, gate: asyncio.Event | None = None,
           entered: asyncio.Event | None = None) -> list[int]:
    """The number of events of each storage append, in order (a gate, when given, holds
    each append until it is set; ``entered`` is set when one reaches it)."""
    storage: Any = log.storage
    sizes: list[int] = []
    original = storage.append

    async def spy(request: Any, *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(request.events))
        if entered is not None:
            entered.set()
        if gate is not None:
            await gate.wait()
        return await original(request, *args, **kwargs)

    storage.append = spy
    return sizes


def _spied_log(log: EventLog) -> list[int]:
    """The number of events of each append the thread store asks its log for, in order."""
    asked: list[int] = []
    log = log.checkpoints.threads._writes._log  # the log the thread store appends through
    original = log.append

    async def spy(tenant_id: str, stream_id: str, events: Any, **kwargs: Any) -> Any:
        asked.append(len(events))
        return await original(tenant_id, stream_id, events, **kwargs)

    log.append = spy  # type: ignore[method-assign]
    return asked


def _value(text: str) -> Payload:
    return Payload("json", f'"{text}"'.encode())


async def _put_writes(log: EventLog, task: str, value: str = "v") -> int:
    return await log.checkpoints.threads.put_writes(
        T, TH, C, task, [(0, "ch", _value(f"{task}:{value}"))])


async def _stored(log: EventLog) -> dict[str, bytes]:
    found = await log.checkpoints.threads.get(T, TH, C)
    assert found is not None
    assert found.writes is not None
    return {write.task_id: write.value.data for write in found.writes}  # type: ignore[union-attr]


@pytest.mark.parametrize("target", ["memory", "file", "sqlite", "postgresql", PGBOUNCER,
                                    CITUS], indirect=True)
async def test_concurrent_writes_of_one_thread_go_in_few_appends(
        target: BackendTarget) -> None:
    """Ten rounds of eight concurrent writes of one thread: at most two appends a round
    (the first write alone, then the seven that queued behind it), every write stored
    with its own value, the log verifies and no queue is left."""
    async with target.open() as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))
        sizes = _spied(log)
        for round_ in range(10):
            await asyncio.gather(*[_put_writes(log, f"r{round_}-{n}") for n in range(8)])
        assert 80 == sum(sizes)
        assert len(sizes) <= 20, sizes
        assert {f"r{r}-{n}": f'"r{r}-{n}:v"'.encode() for r in range(10) for n in range(8)} \
            == await _stored(log)
        assert (await log.verify()).ok
        assert {} == log.checkpoints.threads._writes._queues


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_writes_of_different_actors_are_never_batched_together(
        target: BackendTarget) -> None:
    """Four writes as alice and four as bob, queued at once: each event is recorded as
    appended by its own caller's actor."""
    async with target.open() as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))

        async def as_actor(actor: str, task: str) -> int:
            with log.acting_as(actor):
                return await _put_writes(log, task)

        async with log.checkpoints.threads._lock(T, TH):
            tasks = [asyncio.create_task(as_actor(actor, f"{actor}-{n}"))
                     for n in range(4) for actor in ("alice", "bob")]
            await asyncio.sleep(0.05)
        await asyncio.gather(*tasks)
        actors = {event.event.task_id: event.actor  # type: ignore[attr-defined]
                  async for event in log.read_stream(T, f"thread:{TH}")
                  if event.type == "thread_writes_put"}
        assert {f"{actor}-{n}": actor for n in range(4) for actor in ("alice", "bob")} == actors


async def test_a_refused_batch_is_appended_write_by_write(tmp_path: Any) -> None:
    """A batch holding one write whose event is too large (its many writes' names) is
    refused with nothing written; each write is then appended alone: the others are
    stored, the large one alone gets `PayloadTooLarge`."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}", max_payload_bytes=2_000) as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))
        sizes = _spied(log)
        asked = _spied_log(log)
        many = [(n, f"channel-with-a-long-name-{n:04}", _value("x")) for n in range(60)]
        async with log.checkpoints.threads._lock(T, TH):
            small = [asyncio.create_task(_put_writes(log, f"small-{n}")) for n in range(3)]
            large = asyncio.create_task(log.checkpoints.threads.put_writes(T, TH, C, "large", many))
            await asyncio.sleep(0.05)
        assert [1, 1, 1] == await asyncio.gather(*small)
        with pytest.raises(PayloadTooLarge):
            await large
        assert ([4, 1, 1, 1, 1], [1, 1, 1]) == (asked, sizes)
        assert {f"small-{n}" for n in range(3)} == set(await _stored(log))
        assert (await log.verify()).ok


async def test_a_write_cancelled_while_queued_is_left_out(tmp_path: Any) -> None:
    """Of three writes queued behind a busy thread, the one cancelled before its turn is
    not written; the other two are, in one append."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))
        sizes = _spied(log)
        async with log.checkpoints.threads._lock(T, TH):
            tasks = [asyncio.create_task(_put_writes(log, f"w{n}")) for n in range(3)]
            await asyncio.sleep(0.05)
            tasks[1].cancel()
            await asyncio.sleep(0)
        await asyncio.gather(tasks[0], tasks[2])
        with pytest.raises(asyncio.CancelledError):
            await tasks[1]
        assert [2] == sizes
        assert {"w0", "w2"} == set(await _stored(log))
        assert {} == log.checkpoints.threads._writes._queues


async def test_cancelling_the_writer_of_a_batch_commits_the_others(tmp_path: Any) -> None:
    """The caller whose turn appends a batch is cancelled while the append is under way:
    the append goes on, the other caller returns, and both writes are stored."""
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))
        gate, entered = asyncio.Event(), asyncio.Event()
        sizes = _spied(log, gate, entered)
        async with log.checkpoints.threads._lock(T, TH):
            first = asyncio.create_task(_put_writes(log, "first"))
            second = asyncio.create_task(_put_writes(log, "second"))
            await asyncio.sleep(0.05)
        await asyncio.wait_for(entered.wait(), 10)
        first.cancel()
        await asyncio.sleep(0.01)
        gate.set()
        assert 1 == await asyncio.wait_for(second, 10)
        with pytest.raises(asyncio.CancelledError):
            await first
        assert [2] == sizes
        assert {"first", "second"} == set(await _stored(log))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_write_inside_a_hold_appends_by_itself(target: BackendTarget) -> None:
    """A write made while its task holds the thread's stream appends through the hold at
    once (it neither waits for nor joins the queue)."""
    async with target.open() as log:
        await log.checkpoints.threads.put(T, TH, C, state=_value("s"))
        async with log.hold_stream(T, f"thread:{TH}"):
            assert log.holding_stream()
            assert 1 == await asyncio.wait_for(_put_writes(log, "held"), 10)
        assert not log.holding_stream()
        assert {"held"} == set(await _stored(log))
