"""Contract: verify, the stream-heads view, rebuilds and reopening, on every backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from eventlog import EventLog, VerifyReport, content_digest, open_log
from eventlog.records import StoredEvent
from projections import ViewQuery, compare_views, rebuild
from tests.conftest import BackendTarget
from tests.events import Noted
from tests.procs.settle import settle


async def fill(log: EventLog) -> None:
    """A small log: two tenants, several streams, multi-event appends and a blob."""
    await log.append("t1", "a", [Noted(text="1"), Noted(text="2")])
    await log.append("t1", "b", [Noted(text="3")], attach=[b"state"])
    await log.append("t2", "a", [Noted(text="4")])
    await log.append("t1", "a", [Noted(text="5")], expected_version=2)


async def test_verify_is_ok_on_a_healthy_log(log: EventLog) -> None:
    """Every chain checks out: no problems, every stream and event counted."""
    await fill(log)
    assert VerifyReport(streams=3, events=5, problems=[]) == await log.verify()


async def test_verify_is_ok_on_an_empty_log(log: EventLog) -> None:
    """Nothing stored, nothing wrong."""
    report = await log.verify()
    assert (True, 0, 0) == (report.ok, report.streams, report.events)


async def test_verify_for_one_tenant_checks_only_its_streams(log: EventLog) -> None:
    """verify(tenant_id=...) counts that tenant's streams and events only."""
    await fill(log)
    assert VerifyReport(streams=1, events=1, problems=[]) == await log.verify(tenant_id="t2")


async def test_verify_reports_a_scan_that_reads_fewer_events_than_are_stored(
    log: EventLog, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reader that drops events (here: the scan skips stream t1/b) can never report ok:
    verify counts each tenant's stored events before its scan and compares."""
    await fill(log)
    scan = log.storage.scan_streams

    async def dropping(tenant_id: str | None) -> AsyncIterator[StoredEvent]:
        async for stored in scan(tenant_id):
            if stored.stream_id != "b":
                yield stored

    monkeypatch.setattr(log.storage, "scan_streams", dropping)
    report = await log.verify()
    unread = [problem for problem in report.problems if problem.kind == "unread_events"]
    assert [("t1", "", "the scan read 3 events of tenant 't1', 4 were stored before it began")
            ] == [(problem.tenant_id, problem.stream_id, problem.detail) for problem in unread]


async def test_storage_counts_events_per_tenant(log: EventLog) -> None:
    """count_events counts the stored events of every tenant, or of one."""
    await fill(log)
    assert {"t1": 4, "t2": 1} == await log.storage.count_events(None)
    assert {"t2": 1} == await log.storage.count_events("t2")
    assert {} == await log.storage.count_events("nobody")


async def test_stream_heads_view_tracks_each_stream(log: EventLog) -> None:
    """The inline stream-heads row holds the version, hash and position of the last event."""
    await fill(log)
    last = [event async for event in log.read_stream("t1", "a")][-1]
    rows = await log.storage.query(ViewQuery("stream_heads", {"tenant_id": "t1", "stream_id": "a"}))
    assert [(3, last.hash, last.position, last.recorded_at)] == [
        (row["version"], row["head_hash"], row["last_position"], row["updated_at"]) for row in rows
    ]


async def test_views_equal_a_rebuild_from_the_log(log: EventLog) -> None:
    """compare_views finds no difference between stored views and a rebuild."""
    await fill(log)
    await settle(log)
    assert [] == await compare_views(log)


async def test_rebuild_until_a_position_replays_the_past(log: EventLog) -> None:
    """rebuild(until_position=p) gives the views as they stood after position p."""
    first = await log.append("t", "s", [Noted(text="a")])
    await log.append("t", "s", [Noted(text="b")])
    await settle(log)
    past = await rebuild(log, until_position=first.positions[-1])
    rows = past.select(ViewQuery("stream_heads", {"tenant_id": "t"}))
    assert [1] == [row["version"] for row in rows]


async def test_view_query_is_scoped_by_tenant(log: EventLog) -> None:
    """A view query for one tenant never returns another tenant's rows."""
    await fill(log)
    rows = await log.storage.query(
        ViewQuery("stream_heads", {"tenant_id": "t2"}, order_by=("stream_id",))
    )
    assert [("t2", "a")] == [(row["tenant_id"], row["stream_id"]) for row in rows]


@pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)
async def test_reopening_keeps_everything(target: BackendTarget) -> None:
    """Events, blobs and views survive closing; verify and compare_views stay clean."""
    async with open_log(target.url, **target.options()) as log:
        await fill(log)
        await settle(log)
        events = (await log.read_all()).events
        views = await log.storage.dump_views()
    async with open_log(target.url, **target.options()) as log:
        assert events == (await log.read_all()).events
        assert views == await log.storage.dump_views()
        assert b"state" == await log.get_blob("t1", content_digest(b"state"))
        refs = dict(await log.storage.blob_refs("t1"))
        assert (True, [], {content_digest(b"state"): 1}) == (
            (await log.verify()).ok, await compare_views(log), refs
        )


@pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)
async def test_appending_after_reopening_continues_the_chain(target: BackendTarget) -> None:
    """A reopened store appends at the next version, linked to the stored head."""
    async with open_log(target.url, **target.options()) as log:
        await log.append("t", "s", [Noted(text="a")])
    async with open_log(target.url, **target.options()) as log:
        result = await log.append("t", "s", [Noted(text="b")], expected_version=1)
        first, second = [event async for event in log.read_stream("t", "s")]
        assert (2, first.hash, True) == (result.version, second.prev_hash, (await log.verify()).ok)


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_two_logs_on_one_database_see_each_other(target: BackendTarget) -> None:
    """Two open logs on one SQL database: a stale head cache costs a retry, not an error."""
    async with (
        open_log(target.url, **target.options()) as one,
        open_log(target.url, **target.options()) as two,
    ):
        await one.append("t", "s", [Noted(text="a")])
        await two.append("t", "s", [Noted(text="b")])
        await one.append("t", "s", [Noted(text="c")])
        assert [1, 2, 3] == [event.version async for event in two.read_stream("t", "s")]
        assert (await one.verify()).ok


async def test_verify_while_appending_raises_no_false_alarm(log: EventLog) -> None:
    """Streams that grow or appear between verify reading the heads and scanning the
    events are a live log, not a problem."""
    await fill(log)
    real_query = log.storage.query

    async def query_then_append(query: ViewQuery) -> list[dict[str, Any]]:
        rows = await real_query(query)
        await log.append("t1", "a", [Noted(text="grown")])
        await log.append("t1", "appeared", [Noted(text="new")])
        return rows

    log.storage.query = query_then_append  # type: ignore[method-assign]
    report = await log.verify()
    assert ([], 4, 7) == (report.problems, report.streams, report.events)


async def test_verify_on_a_busy_log_stays_quiet(log: EventLog) -> None:
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
