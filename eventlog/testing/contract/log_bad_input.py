"""Contract: bad input gets a clear error naming the field, and writes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest

from eventlog import (
    Event,
    EventLog,
    InvalidEvent,
    InvalidId,
    InvalidInput,
    PayloadTooLarge,
    content_digest,
)
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted

BAD_IDS: list[Any] = ["", "x" * 256, "a\x00b", "a\nb", "\x1b[31m", "a\x7fb", "\u0085", 42, None,
                     b"bytes"]


"""Empty, too long, NUL, newline, escape, DEL, C1 control, and not strings at all."""


class Unregistered(Event, tag="test.unregistered", frozen=True):
    """An event type nobody registered."""

    text: str


class NotAnEvent(msgspec.Struct):
    """A struct that is not an Event."""

    text: str


async def nothing_written(log: EventLog) -> bool:
    """True when the log holds no event, no view row and no blob."""
    page = await log.read_all()
    views = await log.dump_views()
    return not page.events and not any(views.values())


async def assert_refused(
    log: EventLog, error: type[InvalidInput], field: str, values: list[Any],
    call: Callable[[Any], Awaitable[Any]],
) -> None:
    """``call(value)`` raises ``error`` naming ``field`` for every value; nothing is written."""
    for value in values:
        with pytest.raises(error) as caught:
            await call(value)
        assert (field, True) == (caught.value.field, field in str(caught.value)), value
    assert await nothing_written(log)



class LogBadInputContract(ContractBase):
    """Contract: bad input gets a clear error naming the field, and writes nothing."""

    async def test_bad_tenant_id_is_refused(self, log: EventLog) -> None:
        """An unusable tenant id raises InvalidId naming tenant_id; nothing is written."""
        await assert_refused(log, InvalidId, "tenant_id", BAD_IDS,
                             lambda bad: log.append(bad, "s", [Noted(text="a")]))

    async def test_bad_stream_id_is_refused(self, log: EventLog) -> None:
        """An unusable stream id raises InvalidId naming stream_id; nothing is written."""
        await assert_refused(log, InvalidId, "stream_id", BAD_IDS,
                             lambda bad: log.append("t", bad, [Noted(text="a")]))

    async def test_longest_allowed_id_is_accepted(self, log: EventLog) -> None:
        """255 characters (of any script) is still a valid id."""
        tenant, stream = "t" * 255, "é" * 255
        await log.append(tenant, stream, [Noted(text="a")])
        assert [1] == [event.version async for event in log.read_stream(tenant, stream)]

    async def test_bad_ids_on_reads_are_refused(self, log: EventLog) -> None:
        """read_stream, read_all, get_blob and verify check their ids too."""
        await assert_refused(log, InvalidId, "tenant_id", BAD_IDS,
                             lambda bad: anext(log.read_stream(bad, "s")))
        await assert_refused(log, InvalidId, "stream_id", BAD_IDS,
                             lambda bad: anext(log.read_stream("t", bad)))
        await assert_refused(log, InvalidId, "tenant_id", BAD_IDS,
                             lambda bad: log.get_blob(bad, content_digest(b"x")))
        not_none = [bad for bad in BAD_IDS if bad is not None]  # None: every tenant
        await assert_refused(log, InvalidId, "tenant_id", not_none,
                             lambda bad: log.read_all(tenant_id=bad))
        await assert_refused(log, InvalidId, "tenant_id", not_none,
                             lambda bad: log.verify(tenant_id=bad))

    async def test_unregistered_event_is_refused(self, log: EventLog) -> None:
        """An Event subclass missing from the registry raises InvalidEvent naming its tag."""
        with pytest.raises(InvalidEvent, match=r"test\.unregistered"):
            await log.append("t", "s", [Noted(text="ok"), Unregistered(text="a")])
        assert await nothing_written(log)

    async def test_non_event_is_refused(self, log: EventLog) -> None:
        """Something that is not an Event raises InvalidEvent; nothing is written."""
        values = [NotAnEvent(text="a"), {"type": "test.noted", "text": "a"}, "text", 3, None]
        await assert_refused(log, InvalidEvent, "events", values,
                             lambda bad: log.append("t", "s", [Noted(text="ok"), bad]))

    async def test_events_must_be_a_non_empty_sequence(self, log: EventLog) -> None:
        """An empty list, a bare event or a non-sequence raises InvalidInput naming events."""
        values = [[], (), Noted(text="bare"), None, iter([Noted(text="a")])]
        await assert_refused(log, InvalidInput, "events", values,
                             lambda bad: log.append("t", "s", bad))

    async def test_bad_expected_version_is_refused(self, log: EventLog) -> None:
        """Negative, bool, float, string or None expected versions raise naming the field."""
        values = [-1, -100, True, False, 1.0, "1", "any", None]
        await assert_refused(
            log, InvalidInput, "expected_version", values,
            lambda bad: log.append("t", "s", [Noted(text="a")], expected_version=bad),
        )

    async def test_payload_over_the_maximum_is_refused(self, backend: ContractBackend) -> None:
        """An event encoding to more than max_payload_bytes raises PayloadTooLarge."""
        async with backend.open(max_payload_bytes=100) as log:
            await log.append("t", "s", [Noted(text="small")])
            with pytest.raises(PayloadTooLarge) as caught:
                await log.append("t", "s", [Noted(text="ok"), Noted(text="x" * 100)])
            assert (100, "test.noted") == (caught.value.limit, caught.value.field.split("'")[1])
            assert [1] == [event.version async for event in log.read_stream("t", "s")]

    async def test_blob_over_the_maximum_is_refused(self, backend: ContractBackend) -> None:
        """A blob larger than max_payload_bytes raises PayloadTooLarge; no blob is stored."""
        big = b"x" * 101
        async with backend.open(max_payload_bytes=100) as log:
            with pytest.raises(PayloadTooLarge, match="blob"):
                await log.append("t", "s", [Noted(text="a")], attach=[big])
            assert (None, True) == (await log.get_blob("t", content_digest(big)),
                                    await nothing_written(log))

    async def test_payload_exactly_at_the_maximum_is_accepted(
        self, backend: ContractBackend,
    ) -> None:
        """The limit is inclusive: an event of exactly max_payload_bytes is stored."""
        size = len(msgspec.json.encode(Noted(text="x" * 50)))
        async with backend.open(max_payload_bytes=size) as log:
            result = await log.append("t", "s", [Noted(text="x" * 50)])
        assert 1 == result.version

    async def test_non_bytes_blob_is_refused(self, log: EventLog) -> None:
        """attach takes bytes only."""
        await assert_refused(
            log, InvalidInput, "attach", ["s", bytearray(b"x"), 3, None, [b"x"]],
            lambda bad: log.append("t", "s", [Noted(text="a")], attach=[bad]),
        )

    async def test_bad_release_is_refused(self, log: EventLog) -> None:
        """release takes 32-byte digests mapped to counts ≥ 1."""
        digest = content_digest(b"x")
        await assert_refused(
            log, InvalidInput, "release", [{b"short": 1}, {"digest": 1}],
            lambda bad: log.append("t", "s", [Noted(text="a")], release=bad),
        )
        await assert_refused(
            log, InvalidInput, "release count", [{digest: 0}, {digest: -1}, {digest: True}],
            lambda bad: log.append("t", "s", [Noted(text="a")], release=bad),
        )

    async def test_bad_cursor_is_refused(self, log: EventLog) -> None:
        """A string read_all never returned raises InvalidInput naming after."""
        await assert_refused(
            log, InvalidInput, "after", ["abc", "p:", "p:-1", "x:1", "x:a:b", "", "p:1:2", 5],
            lambda bad: log.read_all(after=bad),
        )

    async def test_bad_limit_is_refused(self, log: EventLog) -> None:
        """read_all's limit is a whole number from 1 to 10,000."""
        await assert_refused(log, InvalidInput, "limit", [0, -1, 10_001, True, 2.5, "10"],
                             lambda bad: log.read_all(limit=bad))

    async def test_bad_from_version_is_refused(self, log: EventLog) -> None:
        """read_stream's from_version must be a whole number."""
        await assert_refused(log, InvalidInput, "from_version", [1.0, "1", None, True],
                             lambda bad: anext(log.read_stream("t", "s", from_version=bad)))

    async def test_bad_blob_digest_is_refused(self, log: EventLog) -> None:
        """get_blob takes a 32-byte digest and says so otherwise."""
        await assert_refused(log, InvalidInput, "digest", [b"short", "0" * 64, None, 7],
                             lambda bad: log.get_blob("t", bad))
