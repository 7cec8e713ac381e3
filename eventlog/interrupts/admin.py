"""The operator and maintenance side of the interrupt store: cleanup, list, inspect,
reconcile and recover. Reads are scoped: a batch outside the permitted tenants (the
``scopes`` the seed API names them) is absent. What this side shares with the store
(the log, options, trust, clock and the fenced change) is `Batches`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import msgspec

from eventlog._logging import get_logger
from eventlog.checkpoints.records import CheckpointRecord
from eventlog.checkpoints.store import CheckpointStore
from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.interrupts import decisions, inputs
from eventlog.interrupts.batches import Batches
from eventlog.interrupts.decisions import BatchView
from eventlog.interrupts.models import (
    CLAIM_STATES,
    OPEN_STATES,
    TERMINAL_STATES,
    AuditEntry,
    BatchInspection,
    BatchPage,
    BatchState,
    BatchSummary,
    CleanupResult,
    ReconcileRejection,
    ReconcileResult,
    Reconciliation,
    Recovery,
)
from eventlog.log import EventLog
from eventlog.records import RecordedEvent
from eventlog.validation import check_id, check_positive_limit
from projections.interrupts import BATCHES
from projections.query import In, ViewQuery

logger = get_logger(__name__)

_CLEANUP_COUNTS: dict[type[Event], str] = {
    ev.ClaimExpired: "leases_expired",
    ev.EffectUnresolved: "effects_unresolved",
    ev.ApprovalExpired: "approvals_expired",
    ev.CaptureAbandoned: "captures_abandoned",
    ev.BatchRetired: "retired",
}
_MAX_CLEANUP_STEPS = 4  # lease → capture → (nothing else can follow within one pass)
_HIDDEN = frozenset({"type", "token_digest"})


def _values(states: Iterable[BatchState]) -> In:
    return In(tuple(state.value for state in states))


class BatchAdmin:
    """Cleanup, list, inspect, reconcile and recover, over the batches of one store."""

    def __init__(self, batches: Batches, checkpoints: CheckpointStore) -> None:
        self.batches = batches
        self.log = batches.log
        self.checkpoints = checkpoints

    # -- cleanup -------------------------------------------------------------------------

    async def cleanup(self, limit: int | None) -> CleanupResult:
        """Find due batches per category (at most ``limit`` each) and step each one."""
        options = self.batches.options
        limit = check_positive_limit("limit", options.cleanup_batch_size if limit is None
                                     else limit, maximum=inputs.MAX_PAGE)
        now = self.batches.now()
        counts: Counter[str] = Counter()
        for tenant_id, batch_id in await self._due(now, limit):
            for _step in range(_MAX_CLEANUP_STEPS):
                stepped = await self.batches.fenced(tenant_id, batch_id, self._cleanup_step)
                if stepped is None:
                    break
                counts[stepped] += 1
        result = CleanupResult(**counts)
        logger.info("cleaned_up", **counts)
        return result

    def _cleanup_step(
        self, view: BatchView | None, now: datetime
    ) -> tuple[Event | None, str | None]:
        if view is None:
            return None, None
        event = decisions.decide_cleanup(view, now, self.batches.options.audit_retention)
        return event, None if event is None else _CLEANUP_COUNTS[type(event)]

    async def _due(self, now: datetime, limit: int) -> list[tuple[str, str]]:
        """Candidate batches, oldest deadline first, per category (deduplicated)."""
        retention = self.batches.options.audit_retention
        categories: list[tuple[Mapping[str, Any], str, Any]] = [
            ({"state": _values(CLAIM_STATES)}, "lease_expires_at",
             lambda v: v.lease_expires_at <= now),
            ({"state": BatchState.PENDING.value}, "approval_expires_at",
             lambda v: v.approval_expires_at <= now),
            ({"capture_state": "running"}, "updated_at",
             lambda v: decisions.capture_orphaned(v, now)),
            ({"state": _values(TERMINAL_STATES)}, "updated_at",
             lambda v: v.updated_at + retention <= now),
        ]
        due: dict[tuple[str, str], None] = {}
        for where, column, is_due in categories:
            rows = await self.log.query(ViewQuery(
                BATCHES, where=where, order_by=(column, "tenant_id", "batch_id"),
                limit=limit,
            ))
            for row in rows:
                view = BatchView.from_row(row)
                if is_due(view):
                    due[(view.tenant_id, view.batch_id)] = None
        return list(due)

    # -- list and inspect ----------------------------------------------------------------

    async def list(
        self, scopes: Iterable[str], limit: int, cursor: str | None, state: str | None
    ) -> BatchPage:
        """Batches within ``scopes`` (permitted tenants) in creation order, keyset-paged by
        creation position."""
        permitted = inputs.check_scopes(scopes)
        limit = inputs.check_limit(limit)
        wanted = inputs.check_state(state)
        after = inputs.decode_cursor("l", cursor)
        where: dict[str, Any] = {"tenant_id": In(permitted)}
        if wanted is not None:
            where["state"] = wanted.value
        rows = await self.log.query(ViewQuery(
            BATCHES, where=where, order_by=("created_position",),
            after=None if after is None else (after,), limit=limit + 1,
        ))
        views = [BatchView.from_row(row) for row in rows[:limit]]
        more = len(rows) > limit
        next_cursor = inputs.encode_cursor("l", views[-1].created_position) if more else None
        return BatchPage(batches=[summarize(view) for view in views], cursor=next_cursor)

    async def inspect(
        self, scopes: Iterable[str], batch_id: str, limit: int, cursor: str | None
    ) -> BatchInspection | None:
        """The batch's metadata, interrupts and a page of its events (tokens removed)."""
        return await inspect_batch(self.log, scopes, batch_id, limit, cursor)

    async def _find(self, tenant_ids: tuple[str, ...], batch_id: str) -> BatchView | None:
        return await _find_batch(self.log, tenant_ids, batch_id)

    # -- operators -----------------------------------------------------------------------

    async def reconcile(
        self, scopes: Iterable[str], batch_id: str, actor: str, reconciliation: Reconciliation
    ) -> ReconcileResult:
        """Append the operator's ruling, fenced like every other batch change."""
        permitted = inputs.check_scopes(scopes)
        check_id("batch_id", batch_id)
        check_id("actor", actor)
        ruling = inputs.check_reconciliation(reconciliation, self.batches.options)
        found = await self._find(permitted, batch_id)
        if found is None:
            return ReconcileResult(False, ReconcileRejection.NOT_FOUND)

        def decide(view: BatchView | None, _now: datetime) -> tuple[Event | None,
                                                                    ReconcileResult]:
            decided = decisions.decide_reconcile(view, actor, ruling)
            if isinstance(decided, ReconcileRejection):
                return None, ReconcileResult(False, decided)
            assert view is not None
            return decided, ReconcileResult(True, None, view.version + 1)

        # The ruling's event is appended by the operator it names: its envelope's actor
        # and its ``actor`` field agree (who decided is who acted).
        with self.batches.log.acting_as(actor):
            result = await self.batches.fenced(found.tenant_id, batch_id, decide)
        logger.info("reconcile_decided", tenant=found.tenant_id, batch_id=batch_id,
                    actor=actor, recorded=result.recorded, reason=result.reason)
        return result

    async def recover(self, tenant_id: str, thread_id: str) -> Recovery:
        """The newest open batch of the thread in the tenant and, unless its operation is
        untrusted, the thread's latest checkpoint. Reads only (`InterruptStore.recover`:
        the tenant is its ``scope``)."""
        check_id("scope", tenant_id)
        inputs.check_thread_id(thread_id)
        rows = await self.log.query(ViewQuery(
            BATCHES, where={"tenant_id": tenant_id, "thread_id": thread_id,
                          "state": _values(OPEN_STATES)},
            order_by=("created_position",), descending=True, limit=1,
        ))
        view = BatchView.from_row(rows[0]) if rows else None
        trusted = view is None or self.batches.trusts(view.operation)
        disposition = decisions.disposition(view, trusted, self.batches.now())
        checkpoint = await self._latest_checkpoint(tenant_id, thread_id) if trusted else None
        return Recovery(checkpoint=checkpoint,
                        batch=None if view is None else summarize(view),
                        disposition=disposition)

    async def _latest_checkpoint(self, tenant_id: str, thread_id: str) -> CheckpointRecord | None:
        return await self.checkpoints.latest(tenant_id, thread_id)


def summarize(view: BatchView) -> BatchSummary:
    """The safe metadata of a batch (no token, no token digest)."""
    return BatchSummary(
        tenant_id=view.tenant_id, batch_id=view.batch_id, thread_id=view.thread_id,
        checkpoint_id=view.checkpoint_id, operation=view.operation, state=view.state,
        version=view.version, generation=view.generation,
        interrupt_ids=tuple(interrupt.id for interrupt in view.interrupts),
        approval_expires_at=view.approval_expires_at, lease_expires_at=view.lease_expires_at,
        effect_started=view.effect_started, capture_state=view.capture_state,
        resolution=view.resolution, reconciled_by=view.reconciled_by,
        created_at=view.created_at, updated_at=view.updated_at,
    )


def audit_entry(recorded: RecordedEvent) -> AuditEntry:
    """One event as an audit entry, without anything token-derived. Stored bytes that are
    not a JSON object (a damaged event a lenient reader let through) become
    ``{"undecodable": why}`` instead of failing the whole inspection."""
    try:
        # On an encrypted log the stored bytes hold sealed fields: the event read is opened.
        details: dict[str, Any] = (msgspec.to_builtins(recorded.event)
                                   if b'"$sealed' in recorded.data
                                   else msgspec.json.decode(recorded.data))
    except msgspec.DecodeError as error:
        details = {"undecodable": str(error)}
    if not isinstance(details, dict):
        details = {"undecodable": "not a JSON object"}
    return AuditEntry(
        version=recorded.version, position=recorded.position, type=recorded.type,
        recorded_at=recorded.recorded_at,
        details={key: value for key, value in details.items() if key not in _HIDDEN},
        actor=recorded.actor,
    )


async def inspect_batch(
    log: EventLog, scopes: Iterable[str], batch_id: str, limit: int, cursor: str | None
) -> BatchInspection | None:
    """`InterruptStore.inspect` on any face of the log: it decides nothing, so a command
    may answer it from the log's read side (a replica, with ``read_url``)."""
    permitted = inputs.check_scopes(scopes)
    check_id("batch_id", batch_id)
    limit = inputs.check_limit(limit)
    after = inputs.decode_cursor("a", cursor) or 0
    view = await _find_batch(log, permitted, batch_id)
    if view is None:
        return None
    events = [event async for event in log.read_stream(
        view.tenant_id, ev.batch_stream(batch_id), after + 1, limit=limit + 1
    )]
    entries = [audit_entry(event) for event in events[:limit]]
    more = len(events) > limit
    return BatchInspection(
        batch=summarize(view), interrupts=view.interrupts, audit=entries,
        cursor=inputs.encode_cursor("a", entries[-1].version) if more else None,
    )


async def _find_batch(
    log: EventLog, tenant_ids: tuple[str, ...], batch_id: str
) -> BatchView | None:
    rows = await log.query(ViewQuery(
        BATCHES, where={"tenant_id": In(tenant_ids), "batch_id": batch_id},
        order_by=("tenant_id",), limit=1,
    ))
    return BatchView.from_row(rows[0]) if rows else None

