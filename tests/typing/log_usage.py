"""Public-API usage of the log, checked by ``mypy --strict`` (never run).

If a signature or result type changes in a way users would notice, this file stops
type-checking.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, assert_type

import eventlog
from eventlog import (
    ANY,
    NO_STREAM,
    AppendResult,
    CheckpointStore,
    Event,
    EventLog,
    EventRegistry,
    InterruptStore,
    LogPage,
    OpenLog,
    RecordedEvent,
    StreamAppend,
    StreamProblem,
    VerifyReport,
    VersionConflict,
    open_log,
    register_event,
)
from eventlog.checkpoints import ThreadCheckpoints
from projections import ViewDifference, ViewQuery, compare_views
from projections.views import STREAM_HEADS


@register_event
class Deposited(Event, tag="typing.deposited", frozen=True):
    """An event declared the documented way (mypy needs ``frozen=True`` repeated)."""

    account: str
    cents: int
    note: str | None = None


async def append_and_read(url: str) -> None:
    """Every log entry point, with the types callers rely on."""
    async with open_log(url, max_payload_bytes=1024) as log:
        assert_type(log, OpenLog)
        plain: EventLog = log  # the face is the log, with the stores beside it
        assert_type(log.log, EventLog)
        assert_type(log.checkpoints, CheckpointStore)
        assert_type(log.interrupts, InterruptStore)
        assert_type(log.threads, ThreadCheckpoints)
        assert_type(log.sibling(), OpenLog)
        del plain
        result = await log.append("tenant", "account-1", [Deposited(account="1", cents=5)])
        assert_type(result, AppendResult)
        assert_type(result.version, int)
        assert_type(result.positions, tuple[int, ...])
        assert_type(result.event_ids, tuple[uuid.UUID, ...])
        await log.append("tenant", "account-2", [Deposited(account="2", cents=1)],
                         expected_version=NO_STREAM, attach=[b"state"])
        await log.append("tenant", "account-1", [Deposited(account="1", cents=2)],
                         expected_version=result.version)
        await log.append("tenant", "account-1", [Deposited(account="1", cents=3)],
                         expected_version=ANY, release={eventlog.content_digest(b"state"): 1})
        batch = await log.append_batch([
            StreamAppend(tenant_id="tenant", stream_id="account-3",
                         events=[Deposited(account="3", cents=1)], expected_version=NO_STREAM,
                         attach=[b"state"]),
            StreamAppend(tenant_id="tenant", stream_id="account-1",
                         events=[Deposited(account="1", cents=4)]),
        ])
        assert_type(batch, list[AppendResult])
        async for recorded in log.read_stream("tenant", "account-1", from_version=2):
            assert_type(recorded, RecordedEvent)
            assert_type(recorded.recorded_at, datetime)
            assert_type(recorded.data, bytes)
            if isinstance(recorded.event, Deposited):
                assert_type(recorded.event.cents, int)
        page = await log.read_all(after=None, limit=100, tenant_id="tenant")
        assert_type(page, LogPage)
        assert_type(page.cursor, str | None)
        assert_type(page.events, list[RecordedEvent])
        blob = await log.get_blob("tenant", eventlog.content_digest(b"state"))
        assert_type(blob, bytes | None)
        report = await log.verify(tenant_id="tenant")
        assert_type(report, VerifyReport)
        assert_type(report.ok, bool)
        assert_type(report.problems, list[StreamProblem])
        rows = await log.query(ViewQuery(STREAM_HEADS, {"tenant_id": "tenant"}))
        assert_type(rows, list[dict[str, Any]])
        head = await log.stream_head("tenant", "account-1")
        assert_type(head, tuple[int, bytes] | None)
        differences = await compare_views(log)
        assert_type(differences, list[ViewDifference])


async def handle_conflict(log: EventLog) -> int:
    """A conflict carries the facts a caller needs to re-decide."""
    try:
        await log.append("tenant", "s", [Deposited(account="s", cents=1)], expected_version=3)
    except VersionConflict as conflict:
        assert_type(conflict.stream_id, str)
        assert_type(conflict.expected, int | str)
        return conflict.actual
    return 3


def own_registry() -> EventRegistry:
    """A registry of one's own, extended without touching the default one."""
    registry = eventlog.default_registry.copy()
    registry.register(Deposited)
    return registry


async def read_from_a_standby(primary: str, standby: str) -> None:
    """A log whose read side is a hot standby, and its twin reading the primary."""
    async with open_log(primary, read_url=standby) as log:
        assert_type(log.on_primary(), EventLog)
        assert_type(await log.wait_readable(5.0), bool)


async def who_did_it(url: str) -> None:
    """A log acting as a service, a block acting as an approver, an append naming its own."""
    async with open_log(url, actor="svc:payments") as log:
        assert_type(log.actor, str | None)
        with log.acting_as("alice@example.com") as principal:
            assert_type(principal, str)
            assert_type(log.acting, str | None)
            assert_type(log.acting_block, str | None)
            await log.append("tenant", "s", [Deposited(account="s", cents=1)])
        await log.append("tenant", "s", [Deposited(account="s", cents=1)], actor="bob")
        async for recorded in log.read_stream("tenant", "s"):
            assert_type(recorded.actor, str | None)


async def retention(url: str) -> None:
    """Legal holds and a retention pass, with the types an operator's script relies on."""
    from datetime import timedelta

    from eventlog.retention import LegalHold, RetentionReport, RetentionStore, check_policy

    async def erase(tenant_id: str, subject: str, *, reason: str) -> None:
        del tenant_id, subject, reason

    async with open_log(url) as log:
        assert_type(log.retention, RetentionStore)
        assert_type(await log.retention.hold("acme", "case-7", reason="audit"), LegalHold)
        assert_type(await log.retention.release("acme", "case-7"), bool)
        assert_type(await log.retention.holds("acme"), list[LegalHold])
        report = await log.retention.apply("acme", older_than=timedelta(days=180),
                                           keep_latest=10, dry_run=True, erase=erase)
        assert_type(report, RetentionReport)
        assert_type(report.expired_subjects, list[str])
        assert_type(report.checkpoints, int)
        assert_type(check_policy(30, None).keep_latest, int | None)
