"""Helpers for the interrupt store's tests: a fake clock, batches, answers, opening a log.

The contract suite's interrupt tests use them, and so can a backend's own further tests
(this repo's race and model tests do).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from eventlog import OpenLog
from eventlog.interrupts import (
    Finish,
    Interrupt,
    InterruptOptions,
    Operation,
    PendingBatch,
    Resume,
    ResumeInput,
)
from projections import ViewDifference, ViewQuery, compare_views

START = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PAY = Operation("payments", "1")
OPTIONS = InterruptOptions(
    preparation_lease=timedelta(minutes=5),
    approval_ttl=timedelta(hours=1),
    audit_retention=timedelta(days=1),
)
APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        """Move the clock forward by ``timedelta(**delta)``."""
        self.now += timedelta(**delta)


class OpensLog(Protocol):
    """What opens a backend's store again with extra `open_log` options (the contract
    suite's `ContractBackend` does)."""

    def open(self, **extra: Any) -> AbstractAsyncContextManager[OpenLog]:
        """`open_log` on the store with ``extra`` options added."""
        ...


def open_interrupt_log(
    backend: OpensLog,
    clock: FakeClock,
    options: InterruptOptions = OPTIONS,
    operations: Iterable[Operation] | None = None,
) -> AbstractAsyncContextManager[OpenLog]:
    """Open ``backend``'s log with a fake clock and interrupt options."""
    return backend.open(clock=clock, interrupt_options=options, operations=operations)


def interrupts(*ids: str, schema: dict[str, Any] | None = APPROVAL) -> list[Interrupt]:
    """Interrupts with the given ids (default one, ``approve``) and a response schema."""
    return [
        Interrupt(id=i, reason="confirmation", message=f"ok {i}?", response_schema=schema)
        for i in (ids or ("approve",))
    ]


async def create(
    log: OpenLog, scope: str = "acme", thread: str = "thread-1", *ids: str
) -> PendingBatch:
    """A pending batch for ``ids`` on ``thread``."""
    return await log.interrupts.create(scope, thread, interrupts(*ids), "cp-1", operation=PAY)


def answer(batch: PendingBatch, **overrides: Any) -> ResumeInput:
    """A complete approving answer to ``batch``."""
    responses = [
        Resume(interrupt_id=i.id, status="resolved", payload={"approved": True})
        for i in batch.interrupts
    ]
    fields: dict[str, Any] = {
        "thread_id": batch.thread_id, "batch_id": batch.batch_id, "responses": responses,
    }
    fields.update(overrides)
    return ResumeInput(**fields)


async def whole_flow(log: OpenLog) -> PendingBatch:
    """A batch through its whole life: created, claimed, captured, its effect started, the
    capture completed and the batch finalized."""
    batch = await create(log)
    claim = (await log.interrupts.try_claim("acme", answer(batch))).claim
    assert claim is not None
    handle = await log.interrupts.start_capture(claim)
    assert handle is not None
    await log.interrupts.try_start_effect(claim)
    await log.interrupts.complete_capture(handle, "completed", "snapshot")
    await log.interrupts.finish(claim, Finish.FINALIZE)
    return batch


async def event_count(log: OpenLog) -> int:
    """How many events the whole log holds (from the stream heads: unlike ``read_all``,
    not held back by a transaction still open elsewhere on a PostgreSQL server)."""
    heads = await log.query(ViewQuery("stream_heads", columns=("version",)))
    return sum(int(head["version"]) for head in heads)


async def view_differences(log: OpenLog) -> list[ViewDifference]:
    """`compare_views`, waiting briefly while PostgreSQL's gap-safe reads hold back events
    behind a transaction still open elsewhere on the server (another test's, say)."""
    differences = await compare_views(log.as_stored())
    for _ in range(50):
        if not differences:
            break
        await asyncio.sleep(0.1)
        differences = await compare_views(log.as_stored())
    return differences


async def batch_row(log: OpenLog, scope: str, batch_id: str) -> dict[str, Any] | None:
    """The raw view row of a batch."""
    rows = await log.query(
        ViewQuery("interrupt_batches", where={"tenant_id": scope, "batch_id": batch_id})
    )
    return rows[0] if rows else None
