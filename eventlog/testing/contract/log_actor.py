"""Contract: who did it. An event records the principal who appended it (its ``actor``),
the hash chain covers it, and an event appended by nobody named records none."""

from __future__ import annotations

import asyncio
import uuid

import msgspec
import pytest

from eventlog import CheckpointRecord, EventLog, InvalidInput, OpenLog, StreamAppend
from eventlog.clock import read_clock
from eventlog.ids import uuid7
from eventlog.log._append import Draft, prepare
from eventlog.records import RecordedEvent
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle


async def _actors(log: EventLog, tenant_id: str = "t", stream_id: str = "s"
                  ) -> list[str | None]:
    return [event.actor async for event in log.read_stream(tenant_id, stream_id)]


async def _everywhere(log: EventLog, tenant_id: str = "t") -> list[list[str | None]]:
    """The actors of a tenant's events as each read path gives them: `read_stream`,
    `read_all`, `find_event` and the storage's own scan (what `verify` reads)."""
    await settle(log)
    streamed = [event async for event in log.read_stream(tenant_id, "s")]
    paged = [e for e in (await log.read_all(tenant_id=tenant_id, limit=100)).events]
    found: list[RecordedEvent | None] = [await log.find_event(tenant_id, e.event_id)
                                         for e in streamed]
    scanned = [e async for e in log.storage.scan_streams(tenant_id)]
    return [[e.actor for e in streamed], [e.actor for e in paged],
            [e.actor if e is not None else "?" for e in found], [e.actor for e in scanned]]


class LogActorContract(ContractBase):
    """Contract: an event's actor round-trips, is chained, and is absent when not given."""

    async def test_an_event_appended_by_nobody_named_has_no_actor(self, log: EventLog
                                                                 ) -> None:
        """Without ``actor=`` anywhere, every read path gives None (never a guess)."""
        await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        assert [[None, None]] * 4 == await _everywhere(log)

    async def test_the_logs_actor_is_recorded_on_every_read_path(
        self, backend: ContractBackend
    ) -> None:
        """`open_log(actor=...)` is recorded on each event, and read back by every path,
        also after reopening the store."""
        async with backend.open(actor="alice@example.com") as log:
            await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
            assert [["alice@example.com"] * 2] * 4 == await _everywhere(log)
            assert (await log.verify()).ok
        if backend.persistent:
            async with backend.open() as again:
                assert [["alice@example.com"] * 2] * 4 == await _everywhere(again)
                assert (await again.verify()).ok

    async def test_acting_as_overrides_the_logs_actor_and_nests(
        self, backend: ContractBackend
    ) -> None:
        """`acting_as` wins over the log's actor inside its block, the innermost block over
        an outer one, an append's own ``actor=`` over both; each block restores what was."""
        async with backend.open(actor="service") as log:
            await log.append("t", "s", [Noted(text="1")])
            with log.acting_as("alice"):
                await log.append("t", "s", [Noted(text="2")])
                with log.acting_as("bob"):
                    await log.append("t", "s", [Noted(text="3")])
                    await log.append("t", "s", [Noted(text="4")], actor="carol")
                await log.append("t", "s", [Noted(text="5")])
            await log.append("t", "s", [Noted(text="6")])
            assert ["service", "alice", "bob", "carol", "alice", "service"] == \
                await _actors(log)

    async def test_acting_as_holds_across_awaits_and_tasks_started_inside(
        self, log: EventLog
    ) -> None:
        """A task started inside `acting_as` acts as it (even after the block ends); one
        started before it, running concurrently, does not (the block does not leak)."""
        started = asyncio.Event()
        go = asyncio.Event()

        async def outsider() -> None:
            started.set()
            await go.wait()
            await log.append("t", "outside", [Noted(text="o")])

        before = asyncio.create_task(outsider())
        await started.wait()
        with log.acting_as("alice"):
            await asyncio.sleep(0)
            inside = asyncio.create_task(log.append("t", "inside", [Noted(text="i")]))
            go.set()
            await before
        await inside
        await log.append("t", "after", [Noted(text="a")])
        assert ([None], ["alice"], [None]) == (
            await _actors(log, stream_id="outside"), await _actors(log, stream_id="inside"),
            await _actors(log, stream_id="after"))

    async def test_the_stores_append_as_the_acting_principal(self, log: EventLog) -> None:
        """A store's events (through the log's primary twin) carry `acting_as`'s actor."""
        assert isinstance(log, OpenLog)
        with log.acting_as("alice"):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="session", run_id=uuid.UUID(int=1), step=1,
                state={"n": 1}))
        await settle(log)
        page = await log.read_all(tenant_id="t")
        assert ["alice"] == [event.actor for event in page.events]

    async def test_a_batch_records_the_acting_principal_on_every_stream(
        self, log: EventLog
    ) -> None:
        """`append_batch` records the acting principal on each stream's events."""
        with log.acting_as("alice"):
            await log.append_batch([StreamAppend(tenant_id="t", stream_id="s",
                                                 events=[Noted(text="a")]),
                                    StreamAppend(tenant_id="t", stream_id="o",
                                                 events=[Noted(text="b")])])
        assert (["alice"], ["alice"]) == (await _actors(log), await _actors(log, stream_id="o"))

    @pytest.mark.parametrize("bad", ["", "   ", "a\nb", "a\x00b", "x" * 256, "a\u2028b", 7])
    async def test_a_bad_principal_is_refused_and_nothing_is_written(
        self, log: EventLog, bad: object
    ) -> None:
        """An empty, blank, over-long, non-string principal or one with a control character
        is refused (`InvalidInput` naming ``actor``) before anything is written."""
        with pytest.raises(InvalidInput, match=r"^actor: "):
            await log.append("t", "s", [Noted(text="a")], actor=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match=r"^actor: "), \
                log.acting_as(bad):  # type: ignore[arg-type]
            pass  # pragma: no cover
        assert ([], None) == (await _actors(log), log.acting)

    async def test_the_longest_principal_round_trips(self, log: EventLog) -> None:
        """A principal of 255 characters, non-ASCII ones included, is stored exactly."""
        longest = "é" * 200 + "ü" * 55
        await log.append("t", "s", [Noted(text="a")], actor=longest)
        assert [longest] == await _actors(log)

    async def test_an_actor_changed_behind_the_logs_back_breaks_verify(
        self, log: EventLog
    ) -> None:
        """An event stored with another actor than its hash covers (a writer bypassing the
        log), or with none where one was hashed, is a hash mismatch at that version."""
        await log.append("t", "s", [Noted(text="a")], actor="alice")
        await log.append("t", "n", [Noted(text="a")])
        for stream, forged in (("s", "mallory"), ("n", "mallory")):
            head = await log.storage.stream_head("t", stream)
            draft = Draft(uuid7(), *log.registry.encode(Noted(text="b")), Noted(text="b"),
                          read_clock(log.clock), "alice" if stream == "s" else None)
            request = prepare("t", stream, head, [draft], {}, {}, log.projections)
            request = msgspec.structs.replace(request, events=[
                msgspec.structs.replace(pending, actor=forged)
                for pending in request.events])
            await log.storage.append(request)
        await log.append("t", "x", [Noted(text="a")], actor="alice")
        report = await log.verify()
        assert [("n", 2, "hash_mismatch"), ("s", 2, "hash_mismatch")] == [
            (p.stream_id, p.version, p.kind) for p in report.problems]
