"""A first contract check: append and read back on every backend."""

from eventlog import EventLog
from tests.events import Noted


async def test_appended_events_read_back_in_order(log: EventLog) -> None:
    """Events appended to a stream come back in version order with their values."""
    await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
    read = [(e.version, e.event) async for e in log.read_stream("t", "s")]
    assert [(1, Noted(text="a")), (2, Noted(text="b"))] == read
