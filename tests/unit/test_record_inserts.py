"""The view rows a write knows to be new are plain inserts: a checkpoint's row (keyed by
its event's version) and the thread records (keyed by their event's version and slot) are
folded as `Insert`, which a SQL backend writes without ``ON CONFLICT`` (on PostgreSQL one
WAL record less a row, and no lookup of a row that cannot be there)."""

from __future__ import annotations

import uuid

from eventlog import CheckpointRecord, open_log
from eventlog.checkpoints.threads import Payload
from projections import INLINE_PROJECTIONS, Insert
from projections.changes import Change
from projections.checkpoints import CHECKPOINTS
from projections.threads import THREAD_RECORDS, THREAD_VALUE_RECORDS, THREAD_WRITE_RECORDS

KNOWN_NEW = {CHECKPOINTS, THREAD_RECORDS, THREAD_VALUE_RECORDS, THREAD_WRITE_RECORDS}


async def test_rows_keyed_by_their_events_version_are_folded_as_inserts() -> None:
    """A create, a put (twice, of one id) and its writes: every change to a table keyed by
    the event's version is an `Insert`."""
    async with open_log("memory://") as log:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=uuid.uuid4(), checkpoint_id="c",
            state={"a": 1}))
        for _ in range(2):
            await log.threads.put("t", "th", "1", state=Payload("json", b"{}"),
                                  channels={"messages": Payload("json", b"[1]")})
        await log.threads.put_writes("t", "th", "1", "task", [(0, "messages",
                                                             Payload("json", b"[2]"))])
        page = await log.read_all()
    changes: list[Change] = [change for event in page.events
                             for projection in INLINE_PROJECTIONS
                             for change in projection.fold(event)]
    known_new = [change for change in changes if change.table in KNOWN_NEW]
    assert KNOWN_NEW == {change.table for change in known_new}
    assert all(isinstance(change, Insert) for change in known_new), known_new
