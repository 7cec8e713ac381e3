"""What the interrupt store and its operator side (`BatchAdmin`) share: the log, the
options, the trusted operations, the clock, and the one fenced way to change a batch.

Every change of a batch reads the batch's view row, asks a decision function what to do,
and appends at most ONE event to the batch's stream with ``expected_version`` = the row's
version. When another writer got there first (`VersionConflict`) it reads and decides
again, at once, at most `MAX_ATTEMPTS` times (`eventlog.log.fencing`); after that the
last conflict is raised. A decision of "nothing" appends nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from eventlog._logging import get_logger
from eventlog.clock import read_clock
from eventlog.errors import VersionConflict
from eventlog.events import Event
from eventlog.events import interrupts as ev
from eventlog.interrupts.decisions import BatchView
from eventlog.interrupts.models import InterruptOptions, Operation, OperationRegistry
from eventlog.log import EventLog
from eventlog.log.fencing import Retries, decide_fenced
from projections.interrupts import BATCHES
from projections.query import ViewQuery

logger = get_logger(__name__)

MAX_ATTEMPTS = 16
"""How often one operation decides after losing a version race before giving up."""
_RETRIES = Retries(attempts=MAX_ATTEMPTS)

R = TypeVar("R")
Decide = Callable[[BatchView | None, datetime], tuple[Event | None, R]]
"""A decision: from the batch's row (None: no such batch) and the time, the event to
append (None: nothing) and what the operation returns."""


@dataclass(frozen=True, slots=True)
class Batches:
    """The interrupt batches of one log, as both the store and its admin side use them:
    its ``options`` and the ``operations`` trusted to resume (None: every operation)."""

    log: EventLog
    options: InterruptOptions
    operations: OperationRegistry | None

    def now(self) -> datetime:
        """The log's clock, read now."""
        return read_clock(self.log.clock)

    def trusts(self, operation: Operation) -> bool:
        """Whether this process may resume ``operation`` (always, with no registry)."""
        return self.operations is None or self.operations.trusts(operation.name,
                                                                 operation.version)

    async def read(self, tenant_id: str, batch_id: str) -> BatchView | None:
        """The batch's view row, decoded, or None."""
        rows = await self.log.query(
            ViewQuery(BATCHES, where={"tenant_id": tenant_id, "batch_id": batch_id}, limit=1)
        )
        return BatchView.from_row(rows[0]) if rows else None

    async def fenced(self, tenant_id: str, batch_id: str, decide: Decide[R]) -> R:
        """Read, decide, append at most one event fenced on the row's version; decide again
        after a lost race (see the module docstring)."""
        stream = ev.batch_stream(batch_id)

        async def once(_attempt: int) -> R:
            view = await self.read(tenant_id, batch_id)
            event, result = decide(view, self.now())
            if event is not None:
                assert view is not None  # a decision appends only to a batch it read
                await self.log.append(tenant_id, stream, [event],
                                      expected_version=view.version)
            return result

        def retried(_attempt: int, _conflict: VersionConflict) -> None:
            logger.debug("batch_raced", tenant=tenant_id, batch_id=batch_id)

        return await decide_fenced(once, _RETRIES, retried)
