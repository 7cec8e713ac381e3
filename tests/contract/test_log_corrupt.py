"""Stored bytes that no longer decode as their type raise our error, naming where."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import CorruptEvent, Event, EventLog, EventRegistry, SchemaError, open_log
from tests.events import Noted


class NotedAsNumber(Event, tag="test.noted", frozen=True):
    """The same tag, with a field type that the stored bytes do not match."""

    text: int


async def test_bytes_that_do_not_decode_raise_corrupt_event(log: EventLog) -> None:
    """Reading an event whose bytes do not fit its registered type names tag, stream, version."""
    await log.append("t", "s", [Noted(text="words")])
    log.registry = EventRegistry([NotedAsNumber])
    with pytest.raises(CorruptEvent) as raised:
        [event async for event in log.read_stream("t", "s")]
    assert ("test.noted", "s", 1) == (
        raised.value.tag, raised.value.stream_id, raised.value.version
    )


async def test_sqlite_without_upgrade_does_not_create_a_database(tmp_path: Path) -> None:
    """upgrade=False on a missing SQLite file refuses and leaves no file behind."""
    path = tmp_path / "missing.db"
    with pytest.raises(SchemaError):
        async with open_log(f"sqlite:///{path}", upgrade=False):
            pass
    assert not path.exists()
