"""Contract: stored bytes that no longer decode as their type raise our error, naming where."""

from __future__ import annotations

import pytest

from eventlog import CorruptEvent, Event, EventLog, EventRegistry
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted


class NotedAsNumber(Event, tag="test.noted", frozen=True):
    """The same tag, with a field type that the stored bytes do not match."""

    text: int



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
