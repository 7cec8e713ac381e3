"""Contract: reading streams and the whole log."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from eventlog import EventLog, EventRegistry, UnknownEventType
from eventlog.hashing import GENESIS_HASH, event_hash
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle

FIXED = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


async def read_everything(log: EventLog, limit: int, tenant_id: str | None = None) -> list[str]:
    """Follow read_all page by page with its cursor; the texts of every event seen."""
    await settle(log)
    texts: list[str] = []
    cursor = None
    while True:
        page = await log.read_all(after=cursor, limit=limit, tenant_id=tenant_id)
        if not page.events:
            return texts
        assert len(page.events) <= limit
        texts.extend(event.event.text for event in page.events)  # type: ignore[attr-defined]
        cursor = page.cursor



class LogReadContract(ContractBase):
    """Contract: reading streams and the whole log."""

    async def test_read_stream_from_a_version(self, log: EventLog) -> None:
        """read_stream(from_version=n) starts at version n."""
        await log.append("t", "s", [Noted(text=str(n)) for n in range(1, 6)])
        read = [event.event async for event in log.read_stream("t", "s", from_version=3)]
        assert [Noted(text="3"), Noted(text="4"), Noted(text="5")] == read

    async def test_read_stream_past_the_end_is_empty(self, log: EventLog) -> None:
        """A from_version after the head yields nothing."""
        await log.append("t", "s", [Noted(text="a")])
        assert [] == [event async for event in log.read_stream("t", "s", from_version=2)]

    async def test_read_stream_from_beyond_any_storable_version_is_empty(
        self, log: EventLog,
    ) -> None:
        """A from_version past 64-bit range reads as empty on every backend, not a driver error."""
        await log.append("t", "s", [Noted(text="a")])
        assert [[], []] == [
            [event async for event in log.read_stream("t", "s", from_version=big)]
            for big in (2**63, 2**70)
        ]

    async def test_read_stream_of_a_missing_stream_is_empty(self, log: EventLog) -> None:
        """A stream never written reads as empty, not an error."""
        assert [] == [event async for event in log.read_stream("t", "nothing")]

    async def test_read_stream_pages_through_a_long_stream(self, log: EventLog) -> None:
        """A stream longer than one storage page reads back whole, in order, and verifies
        across verify's scan pages too."""
        await log.append("t", "s", [Noted(text="x", number=n) for n in range(1, 1002)])
        numbers = [event.event.number async for event in log.read_stream("t", "s")]  # type: ignore[attr-defined]
        report = await log.verify()
        assert (list(range(1, 1002)), True, 1001) == (numbers, report.ok, report.events)

    async def test_read_all_returns_events_in_append_order(self, log: EventLog) -> None:
        """Following read_all from the start yields every event in the order appended."""
        for text in "abcdefg":
            await log.append("t", f"s-{text in 'aceg'}", [Noted(text=text)])
        assert list("abcdefg") == await read_everything(log, limit=1000)

    async def test_read_all_pages_with_its_cursor(self, log: EventLog) -> None:
        """Small pages followed by cursor cover the log exactly once, in order."""
        await log.append("t", "s1", [Noted(text=str(n)) for n in range(7)])
        await log.append("t", "s2", [Noted(text=str(n)) for n in range(7, 10)])
        assert [str(n) for n in range(10)] == await read_everything(log, limit=3)

    async def test_read_all_positions_increase(self, log: EventLog) -> None:
        """Positions in read_all order strictly increase on a single writer."""
        for n in range(5):
            await log.append("t", f"s{n % 2}", [Noted(text=str(n)), Noted(text="more")])
        await settle(log)
        page = await log.read_all(limit=100)
        positions = [event.position for event in page.events]
        assert sorted(set(positions)) == positions

    async def test_read_all_on_an_empty_log(self, log: EventLog) -> None:
        """An empty log gives an empty page and hands back the cursor it was given (None)."""
        page = await log.read_all()
        assert ([], None) == (page.events, page.cursor)

    async def test_empty_page_returns_the_given_cursor(self, log: EventLog) -> None:
        """At the end of the log the page is empty and the cursor is the one passed in."""
        await log.append("t", "s", [Noted(text="a")])
        await settle(log)
        cursor = (await log.read_all()).cursor
        page = await log.read_all(after=cursor)
        assert ([], cursor) == (page.events, page.cursor)

    async def test_cursor_resumes_after_new_appends(self, log: EventLog) -> None:
        """A cursor from the end of the log yields exactly the events appended later."""
        await log.append("t", "s", [Noted(text="a")])
        await settle(log)
        cursor = (await log.read_all()).cursor
        await log.append("t", "s", [Noted(text="b")])
        await log.append("t", "other", [Noted(text="c")])
        await settle(log)
        page = await log.read_all(after=cursor)
        assert ["b", "c"] == [event.event.text for event in page.events]  # type: ignore[attr-defined]

    async def test_read_all_for_one_tenant(self, log: EventLog) -> None:
        """read_all(tenant_id=...) returns only that tenant's events, paged by its cursor."""
        for n in range(6):
            await log.append(f"t{n % 2}", "s", [Noted(text=str(n))])
        assert ["1", "3", "5"] == await read_everything(log, limit=2, tenant_id="t1")

    async def test_read_all_for_an_unknown_tenant_is_empty(self, log: EventLog) -> None:
        """A tenant with no events sees an empty log."""
        await log.append("t", "s", [Noted(text="a")])
        page = await log.read_all(tenant_id="nobody")
        assert ([], None) == (page.events, page.cursor)

    async def test_another_tenants_stream_reads_as_empty(self, log: EventLog) -> None:
        """read_stream in the wrong tenant looks exactly like a missing stream."""
        await log.append("owner", "secret", [Noted(text="a")])
        assert [] == [event async for event in log.read_stream("intruder", "secret")]

    async def test_recorded_event_carries_every_envelope_field(
        self, backend: ContractBackend,
    ) -> None:
        """position, id, tenant, stream, version, time, tag, bytes and both hashes are exact."""
        async with backend.open(clock=lambda: FIXED) as log:
            result = await log.append("t", "s", [Noted(text="a"), Noted(text="b", number=2)])
            first, second = [event async for event in log.read_stream("t", "s")]
        expected_data = msgspec.json.encode(Noted(text="b", number=2))
        expected_hash = event_hash(
            tenant_id="t", stream_id="s", version=2, event_id=result.event_ids[1],
            type="test.noted", recorded_at=FIXED, data=expected_data, prev_hash=first.hash,
        )
        assert (result.positions[1], result.event_ids[1], "t", "s", 2, FIXED, "test.noted") == (
            second.position, second.event_id, second.tenant_id, second.stream_id, second.version,
            second.recorded_at, second.type,
        )
        assert (expected_data, first.hash, expected_hash) == (
            second.data, second.prev_hash, second.hash
        )
        assert Noted(text="b", number=2) == second.event

    async def test_first_event_links_to_the_genesis_hash(self, log: EventLog) -> None:
        """A stream's first event has the all-zero previous hash."""
        await log.append("t", "s", [Noted(text="a")])
        first = await anext(log.read_stream("t", "s"))
        assert GENESIS_HASH == first.prev_hash

    async def test_read_all_and_read_stream_agree(self, log: EventLog) -> None:
        """The same event read through read_all and read_stream is the same RecordedEvent."""
        await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        from_stream = [event async for event in log.read_stream("t", "s")]
        await settle(log)
        assert from_stream == (await log.read_all()).events

    async def test_unknown_tag_on_read_raises_naming_it(self, log: EventLog) -> None:
        """Reading a tag the registry lacks raises UnknownEventType naming the tag."""
        await log.append("t", "s", [Noted(text="a")])
        blind = log.sibling(registry=EventRegistry())
        await settle(log)
        with pytest.raises(UnknownEventType) as caught:
            await blind.read_all()
        assert ("test.noted", "s", 1) == (caught.value.tag, caught.value.stream_id,
                                          caught.value.version)
        assert "test.noted" in str(caught.value)

    async def test_unknown_tag_in_read_stream_raises_too(self, log: EventLog) -> None:
        """read_stream never silently skips an event it cannot decode."""
        await log.append("t", "s", [Noted(text="a")])
        blind = log.sibling(registry=EventRegistry())
        with pytest.raises(UnknownEventType, match=r"test\.noted"):
            _ = [event async for event in blind.read_stream("t", "s")]

    async def test_reopening_with_a_registry_lacking_the_tag_refuses_it(
        self, backend: ContractBackend,
    ) -> None:
        """A store reopened without the event's type raises UnknownEventType, never skips it.

        The file store decodes every event while rebuilding its views, so it refuses at open;
        SQL stores refuse at the read.
        """
        backend.require_persistent()
        async with backend.open() as log:
            await log.append("t", "s", [Noted(text="a")])
            await settle(log)
        with pytest.raises(UnknownEventType, match=r"test\.noted"):
            async with backend.open(registry=EventRegistry()) as log:
                await log.read_all()
