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
    InvalidURL,
    PayloadTooLarge,
    content_digest,
    open_log,
)
from tests.conftest import BackendTarget
from tests.events import Noted

BAD_IDS = [
    pytest.param("", id="empty"),
    pytest.param("x" * 256, id="too-long"),
    pytest.param("a\x00b", id="nul"),
    pytest.param("a\nb", id="newline"),
    pytest.param("\x1b[31m", id="escape"),
    pytest.param("a\x7fb", id="delete"),
    pytest.param(42, id="int"),
    pytest.param(None, id="none"),
    pytest.param(b"bytes", id="bytes"),
]


class Unregistered(Event, tag="test.unregistered"):
    """An event type nobody registered."""

    text: str


class NotAnEvent(msgspec.Struct):
    """A struct that is not an Event."""

    text: str


async def nothing_written(log: EventLog) -> bool:
    """True when the log holds no event, no view row and no blob."""
    page = await log.read_all()
    views = await log.storage.dump_views()
    return not page.events and not any(views.values())


async def assert_refused(
    log: EventLog, error: type[InvalidInput], field: str, call: Callable[[], Awaitable[Any]]
) -> None:
    """``call`` raises ``error`` naming ``field``, and the log stays empty."""
    with pytest.raises(error) as caught:
        await call()
    assert field == caught.value.field
    assert field in str(caught.value)
    assert await nothing_written(log)


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_bad_tenant_id_is_refused(log: EventLog, bad: Any) -> None:
    """An unusable tenant id raises InvalidId naming tenant_id; nothing is written."""
    await assert_refused(log, InvalidId, "tenant_id",
                         lambda: log.append(bad, "s", [Noted(text="a")]))


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_bad_stream_id_is_refused(log: EventLog, bad: Any) -> None:
    """An unusable stream id raises InvalidId naming stream_id; nothing is written."""
    await assert_refused(log, InvalidId, "stream_id",
                         lambda: log.append("t", bad, [Noted(text="a")]))


async def test_longest_allowed_id_is_accepted(log: EventLog) -> None:
    """255 characters (of any script) is still a valid id."""
    tenant, stream = "t" * 255, "é" * 255
    await log.append(tenant, stream, [Noted(text="a")])
    assert [1] == [event.version async for event in log.read_stream(tenant, stream)]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_bad_ids_on_reads_are_refused(log: EventLog, bad: Any) -> None:
    """read_stream, read_all, get_blob and verify check their ids too."""
    with pytest.raises(InvalidId, match="tenant_id"):
        _ = [event async for event in log.read_stream(bad, "s")]
    with pytest.raises(InvalidId, match="stream_id"):
        _ = [event async for event in log.read_stream("t", bad)]
    with pytest.raises(InvalidId, match="tenant_id"):
        await log.get_blob(bad, content_digest(b"x"))
    if bad is not None:  # None means "every tenant" for read_all and verify
        with pytest.raises(InvalidId, match="tenant_id"):
            await log.read_all(tenant_id=bad)
        with pytest.raises(InvalidId, match="tenant_id"):
            await log.verify(tenant_id=bad)


async def test_unregistered_event_is_refused(log: EventLog) -> None:
    """An Event subclass missing from the registry raises InvalidEvent naming its tag."""
    await assert_refused(log, InvalidEvent, "events",
                         lambda: log.append("t", "s", [Unregistered(text="a")]))


@pytest.mark.parametrize(
    "bad", [NotAnEvent(text="a"), {"type": "test.noted", "text": "a"}, "text", 3, None]
)
async def test_non_event_is_refused(log: EventLog, bad: Any) -> None:
    """Something that is not an Event raises InvalidEvent; nothing is written."""
    await assert_refused(log, InvalidEvent, "events",
                         lambda: log.append("t", "s", [Noted(text="ok"), bad]))


@pytest.mark.parametrize("bad", [[], (), Noted(text="bare"), None, iter([Noted(text="a")])])
async def test_events_must_be_a_non_empty_sequence(log: EventLog, bad: Any) -> None:
    """An empty list, a bare event or a non-sequence raises InvalidInput naming events."""
    await assert_refused(log, InvalidInput, "events", lambda: log.append("t", "s", bad))


@pytest.mark.parametrize("bad", [-1, -100, True, False, 1.0, "1", "any", None])
async def test_bad_expected_version_is_refused(log: EventLog, bad: Any) -> None:
    """Negative, bool, float, string or None expected versions raise naming the field."""
    await assert_refused(log, InvalidInput, "expected_version",
                         lambda: log.append("t", "s", [Noted(text="a")], expected_version=bad))


@pytest.mark.parametrize("target", ["memory", "sqlite", "file", "postgresql"], indirect=True)
async def test_payload_over_the_maximum_is_refused(target: BackendTarget) -> None:
    """An event encoding to more than max_payload_bytes raises PayloadTooLarge."""
    async with open_log(target.url, max_payload_bytes=100, **target.options()) as log:
        await log.append("t", "s", [Noted(text="small")])
        with pytest.raises(PayloadTooLarge) as caught:
            await log.append("t", "s", [Noted(text="ok"), Noted(text="x" * 100)])
        assert (100, "test.noted") == (caught.value.limit, caught.value.field.split("'")[1])
        assert [1] == [event.version async for event in log.read_stream("t", "s")]


@pytest.mark.parametrize("target", ["memory", "sqlite", "file", "postgresql"], indirect=True)
async def test_blob_over_the_maximum_is_refused(target: BackendTarget) -> None:
    """A blob larger than max_payload_bytes raises PayloadTooLarge; no blob is stored."""
    big = b"x" * 101
    async with open_log(target.url, max_payload_bytes=100, **target.options()) as log:
        with pytest.raises(PayloadTooLarge, match="blob"):
            await log.append("t", "s", [Noted(text="a")], attach=[big])
        assert (None, True) == (await log.get_blob("t", content_digest(big)),
                                await nothing_written(log))


async def test_payload_exactly_at_the_maximum_is_accepted(target: BackendTarget) -> None:
    """The limit is inclusive: an event of exactly max_payload_bytes is stored."""
    size = len(msgspec.json.encode(Noted(text="x" * 50)))
    async with open_log(target.url, max_payload_bytes=size, **target.options()) as log:
        result = await log.append("t", "s", [Noted(text="x" * 50)])
    assert 1 == result.version


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
async def test_bad_max_payload_bytes_is_refused(bad: Any) -> None:
    """max_payload_bytes must be a whole number ≥ 1."""
    with pytest.raises(InvalidInput, match="max_payload_bytes"):
        async with open_log("memory://", max_payload_bytes=bad):
            pass


@pytest.mark.parametrize("bad", ["s", "str", 3, None, [b"x"]])
async def test_non_bytes_blob_is_refused(log: EventLog, bad: Any) -> None:
    """attach takes bytes only."""
    await assert_refused(log, InvalidInput, "attach",
                         lambda: log.append("t", "s", [Noted(text="a")], attach=[bad]))


@pytest.mark.parametrize(
    "bad", [{b"short": 1}, {"digest": 1}, {content_digest(b"x"): 0},
            {content_digest(b"x"): -1}, {content_digest(b"x"): True}],
)
async def test_bad_release_is_refused(log: EventLog, bad: Any) -> None:
    """release takes 32-byte digests mapped to counts ≥ 1."""
    with pytest.raises(InvalidInput, match="release"):
        await log.append("t", "s", [Noted(text="a")], release=bad)
    assert await nothing_written(log)


@pytest.mark.parametrize("bad", ["abc", "p:", "p:-1", "x:1", "x:a:b", "", "p:1:2", 5])
async def test_bad_cursor_is_refused(log: EventLog, bad: Any) -> None:
    """A string read_all never returned raises InvalidInput naming after."""
    with pytest.raises(InvalidInput) as caught:
        await log.read_all(after=bad)
    assert "after" == caught.value.field


@pytest.mark.parametrize("bad", [0, -1, 10_001, True, 2.5, "10"])
async def test_bad_limit_is_refused(log: EventLog, bad: Any) -> None:
    """read_all's limit is a whole number from 1 to 10,000."""
    with pytest.raises(InvalidInput) as caught:
        await log.read_all(limit=bad)
    assert "limit" == caught.value.field


@pytest.mark.parametrize("bad", [1.0, "1", None])
async def test_bad_from_version_is_refused(log: EventLog, bad: Any) -> None:
    """read_stream's from_version must be a whole number."""
    with pytest.raises(InvalidInput, match="from_version"):
        _ = [event async for event in log.read_stream("t", "s", from_version=bad)]


@pytest.mark.parametrize("bad", [b"short", "0" * 64, None, 7])
async def test_bad_blob_digest_is_refused(log: EventLog, bad: Any) -> None:
    """get_blob takes a 32-byte digest and says so otherwise."""
    with pytest.raises(InvalidInput) as caught:
        await log.get_blob("t", bad)
    assert "digest" == caught.value.field


@pytest.mark.parametrize(
    "url",
    [
        "nosuch://x",
        "mysql://user@host/db",
        "sqlite:/relative.db",
        "sqlite://host/path.db",
        "sqlite:///",
        "postgresql://",
        "postgresql:///db",
        "postgresql://host:notaport/db",
        "file://",
        "file://host/dir",
        "just-a-path.db",
        "",
    ],
)
async def test_bad_url_is_refused(url: str) -> None:
    """A malformed URL or unknown scheme raises InvalidURL carrying the URL."""
    with pytest.raises(InvalidURL) as caught:
        async with open_log(url):
            pass
    assert url == caught.value.url


@pytest.mark.parametrize("bad", [3, b"sqlite:///x.db", object()])
async def test_target_that_is_no_url_nor_engine_is_refused(bad: Any) -> None:
    """open_log takes a URL string or an AsyncEngine."""
    with pytest.raises(InvalidInput, match="target"):
        async with open_log(bad):
            pass


async def test_unknown_backend_option_is_refused() -> None:
    """An option the backend does not take is named in the error."""
    with pytest.raises(InvalidInput, match="pool_size"):
        async with open_log("memory://", pool_size=3):
            pass


@pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 256])
async def test_bad_schema_name_is_refused(bad: str) -> None:
    """The PostgreSQL schema option is checked like an id."""
    with pytest.raises(InvalidId, match="schema"):
        async with open_log("memory://", schema=bad):
            pass
