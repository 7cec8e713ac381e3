"""Contract: the event storage methods the log calls on a backend (``log.storage``),
each asked directly, on events the log appended."""

from __future__ import annotations

import uuid

from eventlog import EventLog
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle


async def fill(log: EventLog) -> None:
    """Three streams over two tenants, appended out of key order: t/b (2 events), t/a
    (1), u/a (3)."""
    await log.append("t", "b", [Noted(text="b1"), Noted(text="b2")])
    await log.append("u", "a", [Noted(text="ua1"), Noted(text="ua2"), Noted(text="ua3")])
    await log.append("t", "a", [Noted(text="a1")])


class EventStorageCalls(ContractBase):
    """Contract: each `EventStorage` method, asked of the backend directly."""

    async def test_stream_head_is_the_last_version_and_its_hash(self, log: EventLog) -> None:
        """`stream_head` gives the stream's last version and that event's hash; None for a
        stream without events and for the same stream id in another tenant."""
        await fill(log)
        last = [event async for event in log.read_stream("u", "a")][-1]
        storage = log.storage
        assert ((3, last.hash), None, None) == (
            await storage.stream_head("u", "a"), await storage.stream_head("u", "b"),
            await storage.stream_head("v", "a"))

    async def test_stream_heads_leave_out_streams_without_events(self, log: EventLog) -> None:
        """`stream_heads` of many keys is `stream_head` of each, streams without events
        left out."""
        await fill(log)
        storage = log.storage
        keys = [("t", "a"), ("t", "b"), ("u", "a"), ("u", "b"), ("v", "a")]
        expected = {}
        for tenant_id, stream_id in keys[:3]:
            expected[(tenant_id, stream_id)] = await storage.stream_head(tenant_id, stream_id)
        assert (expected, {}) == (await storage.stream_heads(keys),
                                  await storage.stream_heads([]))

    async def test_events_newest_first_walk_one_tenant_back_from_a_position(
        self, log: EventLog
    ) -> None:
        """`events_newest_first` gives a tenant's (stream, version, position, actor) newest
        first, below ``before``, at most ``limit``; another tenant's events never."""
        with log.acting_as("ops@t"):
            await log.append("t", "a", [Noted(text="a2")])
        await fill(log)
        await settle(log)  # read_all's horizon: every event committed so far readable
        storage = log.storage
        mine = [(e.stream_id, e.version, e.position, e.actor)
                for e in (await log.read_all(tenant_id="t")).events][::-1]
        newest = await storage.events_newest_first("t", None, 10)
        assert ([("a", 2), ("b", 2), ("b", 1), ("a", 1)], mine, mine[:1], mine[1:], []) == (
            [(stream, version) for stream, version, *_ in newest], newest,
            await storage.events_newest_first("t", None, 1),
            await storage.events_newest_first("t", mine[0][2], 10),
            await storage.events_newest_first("v", None, 10))
        assert ("ops@t", None) == (newest[-1][3], newest[0][3])

    async def test_read_stream_gives_a_limited_slice_from_a_version(
        self, log: EventLog
    ) -> None:
        """`read_stream` gives at most ``limit`` events from ``from_version`` on, in
        version order, of that tenant's stream only."""
        await fill(log)
        storage = log.storage
        page = await storage.read_stream("u", "a", 2, 1)
        rest = await storage.read_stream("u", "a", 2, 10)
        assert ([2], [2, 3], []) == ([e.version for e in page], [e.version for e in rest],
                                     await storage.read_stream("t", "a", 2, 10))

    async def test_read_all_pages_in_log_order_with_its_cursor(self, log: EventLog) -> None:
        """`read_all` pages through the log in position order; an empty page returns the
        cursor it was given; a tenant's pages hold only its events."""
        await fill(log)
        await settle(log)
        storage = log.storage
        seen, cursor = [], None
        while True:
            page, after = await storage.read_all(cursor, 2, None)
            assert len(page) <= 2
            if not page:
                assert cursor == after
                break
            seen += page
            cursor = after
        tenant, _ = await storage.read_all(None, 10, "u")
        positions = [event.position for event in seen]
        assert (6, sorted(positions), ["u"] * 3) == (
            len(seen), positions, [event.tenant_id for event in tenant])

    async def test_scan_streams_orders_by_tenant_stream_and_version(
        self, log: EventLog
    ) -> None:
        """`scan_streams` gives every event by (tenant, stream, version), or one tenant's."""
        await fill(log)
        storage = log.storage
        every = [(e.tenant_id, e.stream_id, e.version) async for e in storage.scan_streams(None)]
        only_t = [(e.tenant_id, e.stream_id) async for e in storage.scan_streams("t")]
        assert sorted(every) == every
        assert (6, [("t", "a"), ("t", "b"), ("t", "b")]) == (len(every), only_t)

    async def test_scan_streams_with_a_prefix_reads_only_those_streams(
        self, log: EventLog
    ) -> None:
        """`scan_streams` with ``prefix`` gives the events of the tenant's streams whose id
        starts with it, in order, and no other: not a stream that sorts just before or
        after the prefix's range (``ab`` before it, ``ab;`` and ``ac`` after ``ab:``), nor
        another tenant's."""
        for tenant, stream in (("t", "ab"), ("t", "ab:2"), ("t", "ab:1"), ("t", "ab;"),
                               ("t", "ac"), ("u", "ab:1")):
            await log.append(tenant, stream, [Noted(text="x"), Noted(text="y")])
        storage = log.storage
        found = [(e.stream_id, e.version) async for e in storage.scan_streams("t", "ab:")]
        everyone = [(e.tenant_id, e.stream_id) async for e in storage.scan_streams(None, "ab:")]
        assert [("ab:1", 1), ("ab:1", 2), ("ab:2", 1), ("ab:2", 2)] == found
        assert [("t", "ab:1")] * 2 + [("t", "ab:2")] * 2 + [("u", "ab:1")] * 2 == everyone

    async def test_count_events_counts_per_tenant(self, log: EventLog) -> None:
        """`count_events` counts every tenant's events, or only the tenant asked about."""
        await fill(log)
        storage = log.storage
        assert ({"t": 3, "u": 3}, {"u": 3}, 0) == (
            await storage.count_events(None), await storage.count_events("u"),
            (await storage.count_events("v")).get("v", 0))

    async def test_find_event_finds_an_id_in_its_own_tenant(self, log: EventLog) -> None:
        """`find_event` finds a committed event by id in its tenant, and nothing in another
        tenant or for an id never written."""
        result = await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        storage = log.storage
        found = await storage.find_event("t", result.event_ids[1])
        assert found is not None
        assert (result.event_ids[1], 2, None, None) == (
            found.event_id, found.version, await storage.find_event("u", result.event_ids[1]),
            await storage.find_event("t", uuid.uuid4()))

    async def test_wait_readable_is_true_on_a_quiet_log(self, log: EventLog) -> None:
        """`wait_readable` returns True once what was committed is readable."""
        await log.append("t", "s", [Noted(text="a")])
        assert await log.storage.wait_readable(30.0)

    async def test_appends_inside_a_hold_land(self, log: EventLog) -> None:
        """Appends made inside `hold_stream` are committed when the block ends."""
        await log.append("t", "s", [Noted(text="a")])
        async with log.hold_stream("t", "s"):
            await log.append("t", "s", [Noted(text="b")])
            await log.append("t", "other", [Noted(text="c")])
        head = await log.storage.stream_head("t", "s")
        assert (2, 1) == (head[0] if head else None,
                          len(await log.storage.read_stream("t", "other", 1, 10)))
