"""Contract: stored bytes that no longer decode as their type raise our error, naming where."""

from __future__ import annotations

import pytest

from eventlog import CorruptEvent, Event, EventLog, EventRegistry, StreamAppend, UnreadableEvent
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted


class NotedAsNumber(Event, tag="test.noted", frozen=True):
    """The same tag, with a field type that the stored bytes do not match."""

    text: int


class Ping(Event, tag="test.ping", frozen=True):
    """An event with an int field (msgspec does not check types when one is made)."""

    n: int


def _with_ping(log: EventLog) -> None:
    """Let ``log`` append `Ping` (registered in a copy of its registry)."""
    log.registry = log.registry.copy()
    log.registry.register(Ping)


async def _stored(log: EventLog, stream_id: str) -> list[str]:
    """The types of the events stored in a stream of tenant ``t``."""
    return [event.type async for event in log.read_stream("t", stream_id)]


class LogCorruptContract(ContractBase):
    """Contract: stored bytes that no longer decode as their type raise our error, naming where."""

    async def test_bytes_that_do_not_decode_raise_corrupt_event(self, log: EventLog) -> None:
        """Reading an event whose bytes do not fit its registered type names tag, stream and
        version."""
        await log.append("t", "s", [Noted(text="words")])
        log.registry = EventRegistry([NotedAsNumber])
        with pytest.raises(CorruptEvent) as raised:
            [event async for event in log.read_stream("t", "s")]
        assert ("test.noted", "s", 1) == (
            raised.value.tag, raised.value.stream_id, raised.value.version
        )

    async def test_an_event_that_would_not_decode_is_refused(self, log: EventLog) -> None:
        """An event holding a value of another type than its field's is refused at append,
        naming the stream, the event type and msgspec's path; nothing is written."""
        _with_ping(log)
        with pytest.raises(UnreadableEvent) as raised:
            await log.append("t", "s", [Noted(text="first"), Ping(n="one")])  # type: ignore[arg-type]
        error = raised.value
        assert ("s", "test.ping", "$.n", True) == (
            error.stream_id, error.tag, error.path, "Expected `int`, got `str`" in str(error))
        assert [] == await _stored(log, "s")

    async def test_a_float_json_cannot_hold_is_refused(self, log: EventLog) -> None:
        """A NaN in an int field (stored as null) is refused as well."""
        _with_ping(log)
        with pytest.raises(UnreadableEvent, match="got `null`"):
            await log.append("t", "s", [Ping(n=float("nan"))])  # type: ignore[arg-type]
        assert [] == await _stored(log, "s")

    async def test_a_batch_holding_an_event_that_would_not_decode_writes_nothing(
        self, log: EventLog
    ) -> None:
        """append_batch refuses the whole batch, the good stream's events included."""
        _with_ping(log)
        with pytest.raises(UnreadableEvent, match="'bad'"):
            await log.append_batch([
                StreamAppend(tenant_id="t", stream_id="good", events=[Noted(text="kept?")]),
                StreamAppend(tenant_id="t", stream_id="bad",
                             events=[Ping(n="one")]),  # type: ignore[arg-type]
            ])
        assert ([], []) == (await _stored(log, "good"), await _stored(log, "bad"))

    async def test_verify_reports_a_stored_event_that_does_not_decode(
        self, log: EventLog
    ) -> None:
        """An event whose bytes hash right but no longer decode as its type (here its tag
        now names a type with an int field) is an ``undecodable_event`` finding; the
        stream's later events are still checked and decode."""
        await log.append("t", "s", [Noted(text="words"), Noted(text="more")])
        log.registry = EventRegistry([NotedAsNumber])
        report = await log.verify()
        assert (False, [("s", 1, "undecodable_event"), ("s", 2, "undecodable_event")]) == (
            report.ok, [(p.stream_id, p.version, p.kind) for p in report.problems])
        assert "Expected `int`, got `str` - at `$.text`" in report.problems[0].detail
