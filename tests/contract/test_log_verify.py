"""verify against a storage that drops or races, event counts, two logs on one SQL
database. (The per-backend verify contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from eventlog import EventLog, open_log
from eventlog.records import StoredEvent
from eventlog.testing.contract.log_verify import fill
from projections import ViewQuery
from tests.conftest import BackendTarget
from tests.events import Noted


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
