"""Contract: appending with optimistic concurrency."""

from __future__ import annotations

import asyncio

import pytest

from eventlog import ANY, NO_STREAM, AppendResult, EventLog, VersionConflict
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import fresh_id, settle


async def versions(log: EventLog, tenant: str, stream: str) -> list[int]:
    """The versions stored in one stream, in order."""
    return [event.version async for event in log.read_stream(tenant, stream)]



class LogAppendContract(ContractBase):
    """Contract: appending with optimistic concurrency."""

    async def test_first_append_starts_the_stream_at_version_one(self, log: EventLog) -> None:
        """A new stream's first event gets version 1 and the result says so."""
        result = await log.append("t", "s", [Noted(text="a")])
        assert ("s", 1, 1) == (result.stream_id, result.version, len(result.positions))

    async def test_multi_event_append_gets_consecutive_versions(self, log: EventLog) -> None:
        """Events of one append get consecutive versions after the stream's head."""
        await log.append("t", "s", [Noted(text="a")])
        result = await log.append("t", "s", [Noted(text="b"), Noted(text="c"), Noted(text="d")])
        assert 4 == result.version
        assert [1, 2, 3, 4] == await versions(log, "t", "s")

    async def test_multi_event_append_gets_increasing_positions(self, log: EventLog) -> None:
        """Positions within one append increase, and follow every earlier append's."""
        first = await log.append("t", "other", [Noted(text="x")])
        result = await log.append("t", "s", [Noted(text=str(n)) for n in range(5)])
        positions = list(result.positions)
        assert sorted(positions) == positions
        assert len(set(positions)) == 5
        assert first.positions[-1] < positions[0]

    async def test_append_result_names_the_event_ids_it_wrote(self, log: EventLog) -> None:
        """The event ids in the result are the ids the stored events carry."""
        result = await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        stored = [event.event_id async for event in log.read_stream("t", "s")]
        assert list(result.event_ids) == stored

    async def test_event_ids_are_time_ordered_uuid7(self, log: EventLog) -> None:
        """Event ids are UUIDv7 and increase in append order (so the unique index on them
        grows at its right edge), across appends and within one."""
        first = await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        second = await log.append("t", "other", [Noted(text="c")])
        ids = [*first.event_ids, *second.event_ids]
        assert [7, 7, 7] == [event_id.version for event_id in ids]
        assert sorted(ids, key=lambda event_id: event_id.bytes) == ids
        assert 3 == len(set(ids))

    async def test_positions_in_result_match_the_stored_positions(self, log: EventLog) -> None:
        """The positions an append returns are the positions its events are read back at."""
        result = await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        stored = [event.position async for event in log.read_stream("t", "s")]
        assert list(result.positions) == stored

    async def test_any_appends_at_the_end_whatever_the_version(self, log: EventLog) -> None:
        """`ANY` appends after whatever is there."""
        await log.append("t", "s", [Noted(text="a")], expected_version=ANY)
        result = await log.append("t", "s", [Noted(text="b")], expected_version=ANY)
        assert 2 == result.version

    async def test_no_stream_creates_a_new_stream(self, log: EventLog) -> None:
        """`NO_STREAM` succeeds on a stream with no events."""
        result = await log.append("t", "s", [Noted(text="a")], expected_version=NO_STREAM)
        assert 1 == result.version

    async def test_no_stream_on_an_existing_stream_conflicts(self, log: EventLog) -> None:
        """`NO_STREAM` on a stream with events raises a conflict carrying the facts."""
        await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        with pytest.raises(VersionConflict) as caught:
            await log.append("t", "s", [Noted(text="c")], expected_version=NO_STREAM)
        assert ("s", "no stream", 2) == (
            caught.value.stream_id, caught.value.expected, caught.value.actual
        )

    async def test_exact_version_appends_when_it_matches(self, log: EventLog) -> None:
        """An exact expected version equal to the head appends after it."""
        await log.append("t", "s", [Noted(text="a")])
        result = await log.append("t", "s", [Noted(text="b")], expected_version=1)
        assert 2 == result.version

    async def test_exact_version_behind_conflicts_and_writes_nothing(self, log: EventLog) -> None:
        """A stale exact version raises VersionConflict(stream, expected, actual); nothing lands."""
        await log.append("t", "s", [Noted(text="a"), Noted(text="b"), Noted(text="c")])
        with pytest.raises(VersionConflict) as caught:
            await log.append("t", "s", [Noted(text="x"), Noted(text="y")], expected_version=1)
        assert ("s", 1, 3) == (caught.value.stream_id, caught.value.expected, caught.value.actual)
        assert [1, 2, 3] == await versions(log, "t", "s")

    async def test_exact_version_ahead_conflicts(self, log: EventLog) -> None:
        """An expected version beyond the head is a conflict too."""
        await log.append("t", "s", [Noted(text="a")])
        with pytest.raises(VersionConflict) as caught:
            await log.append("t", "s", [Noted(text="b")], expected_version=5)
        assert (5, 1) == (caught.value.expected, caught.value.actual)

    async def test_exact_version_on_a_missing_stream_conflicts(self, log: EventLog) -> None:
        """Expecting version 2 of a stream that does not exist reports actual version 0."""
        with pytest.raises(VersionConflict) as caught:
            await log.append("t", "s", [Noted(text="a")], expected_version=2)
        assert (2, 0) == (caught.value.expected, caught.value.actual)
        assert [] == await versions(log, "t", "s")

    async def test_zero_expected_version_means_no_stream(self, log: EventLog) -> None:
        """Expected version 0 is the same as NO_STREAM."""
        result = await log.append("t", "s", [Noted(text="a")], expected_version=0)
        with pytest.raises(VersionConflict):
            await log.append("t", "s", [Noted(text="b")], expected_version=0)
        assert 1 == result.version

    async def test_conflict_leaves_the_log_and_views_unchanged(self, log: EventLog) -> None:
        """After a conflict, read_all and the views hold exactly what they held before."""
        await log.append("t", "s", [Noted(text="a")])
        await settle(log)
        before = (await log.read_all(), await log.dump_views())
        with pytest.raises(VersionConflict):
            await log.append("t", "s", [Noted(text="b")], expected_version=NO_STREAM)
        after = (await log.read_all(), await log.dump_views())
        assert before == after

    async def test_streams_of_one_tenant_are_independent(self, log: EventLog) -> None:
        """Each stream counts its own versions."""
        await log.append("t", "a", [Noted(text="1"), Noted(text="2")])
        result = await log.append("t", "b", [Noted(text="1")], expected_version=NO_STREAM)
        assert 1 == result.version

    async def test_same_stream_id_in_two_tenants_is_two_streams(self, log: EventLog) -> None:
        """A stream id is scoped by tenant: NO_STREAM succeeds in the second tenant."""
        await log.append("t1", "s", [Noted(text="a")])
        result = await log.append("t2", "s", [Noted(text="b")], expected_version=NO_STREAM)
        assert 1 == result.version

    async def test_concurrent_any_appends_in_one_loop_all_land(self, log: EventLog) -> None:
        """Many ANY appends racing in one event loop all land with dense versions."""
        stream = fresh_id("s")
        results = await asyncio.gather(
            *(log.append("t", stream, [Noted(text=str(n))]) for n in range(20))
        )
        assert all(isinstance(result, AppendResult) for result in results)
        assert list(range(1, 21)) == await versions(log, "t", stream)
        assert list(range(1, 21)) == sorted(result.version for result in results)
