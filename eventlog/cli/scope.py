"""Finding what a command names: a tenant, a session and the streams that hold its story.

A session's history is its checkpoint stream (``session:<id>``), the thread of the same
id (``thread:<id>``, where LangGraph's checkpoints live) and the streams of the interrupt
batches raised on its thread. Live batches are found through the interrupt
view; ``scan=True`` reads the tenant's whole log instead, which also finds batches that
cleanup retired from the views after the audit retention.
"""

from __future__ import annotations

from eventlog.checkpoints.decisions import session_stream
from eventlog.checkpoints.thread_decisions import MAX_THREAD_ID_LENGTH, thread_stream
from eventlog.cli.errors import CommandError
from eventlog.events.interrupts import batch_stream
from eventlog.log import EventLog
from eventlog.transfer import SessionMembership
from projections.interrupts import BATCHES
from projections.query import ViewQuery
from projections.views import STREAM_HEADS

_PAGE = 1000


async def require_tenant(log: EventLog, tenant_id: str) -> None:
    """Raise a one-line `CommandError` when the tenant has no events in this log."""
    rows = await log.query(
        ViewQuery(STREAM_HEADS, {"tenant_id": tenant_id}, limit=1, columns=("stream_id",))
    )
    if not rows:
        raise CommandError(f"unknown tenant {tenant_id!r}: it has no events in this log")


async def session_streams(
    log: EventLog, tenant_id: str, session_id: str, *, scan: bool = False
) -> list[str]:
    """The streams holding the session's history that exist: checkpoints first, then
    its interrupt batches in the order they were created."""
    streams = []
    if await _stream_exists(log, tenant_id, session_stream(session_id)):
        streams.append(session_stream(session_id))
    if _fits_thread(session_id) and await _stream_exists(
        log, tenant_id, thread_stream(session_id)
    ):
        streams.append(thread_stream(session_id))  # a LangGraph thread of the same name
    if scan:
        batches = await _scanned_batch_streams(log, tenant_id, session_id)
    else:
        rows = await log.query(ViewQuery(
            BATCHES, {"tenant_id": tenant_id, "thread_id": session_id},
            order_by=("created_position",), columns=("batch_id",),
        ))
        batches = [batch_stream(row["batch_id"]) for row in rows]
    return streams + batches


async def require_session(
    log: EventLog, tenant_id: str, session_id: str, *, scan: bool = False
) -> list[str]:
    """The session's streams; a one-line `CommandError` for an unknown tenant or session."""
    await require_tenant(log, tenant_id)
    streams = await session_streams(log, tenant_id, session_id, scan=scan)
    if not streams:
        raise CommandError(
            f"unknown session or thread {session_id!r} in tenant {tenant_id!r}: no "
            "checkpoints (of a session, a LangGraph thread or an Agent Framework workflow) "
            "and no interrupt batches name it"
        )
    return streams


def _fits_thread(session_id: str) -> bool:
    return len(session_id) <= MAX_THREAD_ID_LENGTH


async def _stream_exists(log: EventLog, tenant_id: str, stream_id: str) -> bool:
    rows = await log.query(ViewQuery(
        STREAM_HEADS, {"tenant_id": tenant_id, "stream_id": stream_id}, limit=1,
        columns=("version",),
    ))
    return bool(rows)


async def _scanned_batch_streams(log: EventLog, tenant_id: str, session_id: str) -> list[str]:
    membership = SessionMembership(session_id)
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=tenant_id)
        for event in page.events:
            membership.includes(event)
        if not page.events:
            break
        cursor = page.cursor
    found = membership.streams - {session_stream(session_id), thread_stream(session_id)}
    return [stream for stream in membership.order if stream in found]
