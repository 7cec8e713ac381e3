"""Contract: verify, the stream-heads view, rebuilds and reopening."""

from __future__ import annotations

import asyncio

from eventlog import EventLog, VerifyReport, content_digest
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle
from projections import ViewQuery, compare_views, rebuild


async def fill(log: EventLog) -> None:
    """A small log: two tenants, several streams, multi-event appends and a blob."""
    await log.append("t1", "a", [Noted(text="1"), Noted(text="2")])
    await log.append("t1", "b", [Noted(text="3")], attach=[b"state"])
    await log.append("t2", "a", [Noted(text="4")])
    await log.append("t1", "a", [Noted(text="5")], expected_version=2)



class LogVerifyContract(ContractBase):
    """Contract: verify, the stream-heads view, rebuilds and reopening."""

    async def test_verify_is_ok_on_a_healthy_log(self, log: EventLog) -> None:
        """Every chain checks out: no problems, every stream and event counted."""
        await fill(log)
        assert VerifyReport(streams=3, events=5, problems=[], blobs=1) == await log.verify()

    async def test_verify_is_ok_on_an_empty_log(self, log: EventLog) -> None:
        """Nothing stored, nothing wrong."""
        report = await log.verify()
        assert (True, 0, 0) == (report.ok, report.streams, report.events)

    async def test_verify_for_one_tenant_checks_only_its_streams(self, log: EventLog) -> None:
        """verify(tenant_id=...) counts that tenant's streams and events only."""
        await fill(log)
        assert VerifyReport(streams=1, events=1, problems=[]) == await log.verify(tenant_id="t2")

    async def test_stream_heads_view_tracks_each_stream(self, log: EventLog) -> None:
        """The inline stream-heads row holds the version, hash and position of the last event."""
        await fill(log)
        last = [event async for event in log.read_stream("t1", "a")][-1]
        rows = await log.query(ViewQuery("stream_heads", {"tenant_id": "t1", "stream_id": "a"}))
        assert [(3, last.hash, last.position, last.recorded_at)] == [
            (row["version"], row["head_hash"], row["last_position"], row["updated_at"])
            for row in rows
        ]

    async def test_views_equal_a_rebuild_from_the_log(self, log: EventLog) -> None:
        """compare_views finds no difference between stored views and a rebuild."""
        await fill(log)
        await settle(log)
        assert [] == await compare_views(log)

    async def test_rebuild_until_a_position_replays_the_past(self, log: EventLog) -> None:
        """rebuild(until_position=p) gives the views as they stood after position p."""
        first = await log.append("t", "s", [Noted(text="a")])
        await log.append("t", "s", [Noted(text="b")])
        await settle(log)
        past = await rebuild(log, until_position=first.positions[-1])
        rows = past.select(ViewQuery("stream_heads", {"tenant_id": "t"}))
        assert [1] == [row["version"] for row in rows]

    async def test_view_query_is_scoped_by_tenant(self, log: EventLog) -> None:
        """A view query for one tenant never returns another tenant's rows."""
        await fill(log)
        rows = await log.query(
            ViewQuery("stream_heads", {"tenant_id": "t2"}, order_by=("stream_id",))
        )
        assert [("t2", "a")] == [(row["tenant_id"], row["stream_id"]) for row in rows]

    async def test_reopening_keeps_everything(self, backend: ContractBackend) -> None:
        """Events, blobs and views survive closing; verify and compare_views stay clean."""
        backend.require_persistent()
        async with backend.open() as log:
            await fill(log)
            await settle(log)
            events = (await log.read_all()).events
            views = await log.dump_views()
        async with backend.open() as log:
            assert events == (await log.read_all()).events
            assert views == await log.dump_views()
            assert b"state" == await log.get_blob("t1", content_digest(b"state"))
            refs = dict(await log.blob_refs("t1"))
            assert (True, [], {content_digest(b"state"): 1}) == (
                (await log.verify()).ok, await compare_views(log), refs
            )

    async def test_appending_after_reopening_continues_the_chain(
        self, backend: ContractBackend,
    ) -> None:
        """A reopened store appends at the next version, linked to the stored head."""
        backend.require_persistent()
        async with backend.open() as log:
            await log.append("t", "s", [Noted(text="a")])
        async with backend.open() as log:
            result = await log.append("t", "s", [Noted(text="b")], expected_version=1)
            first, second = [event async for event in log.read_stream("t", "s")]
            assert (2, first.hash, True) == (
                result.version, second.prev_hash, (await log.verify()).ok
            )

    async def test_verify_on_a_busy_log_stays_quiet(self, log: EventLog) -> None:
        """Repeated verifies racing a writer task report nothing."""
        stop = asyncio.Event()

        async def keep_appending() -> None:
            number = 0
            while not stop.is_set():
                number += 1
                await log.append("t", f"s{number % 7}", [Noted(text=str(number))])
                await log.append("t", f"new-{number}", [Noted(text=str(number))])
                await asyncio.sleep(0)  # the memory and file stores never suspend on their own

        await fill(log)
        writer = asyncio.create_task(keep_appending())
        await asyncio.sleep(0.02)
        try:
            reports = [await log.verify() for _ in range(15)]
        finally:
            stop.set()
            await writer
        assert [[]] * 15 == [report.problems for report in reports]
