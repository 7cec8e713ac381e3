"""`ConsumerStorage` in a dictionary, for the in-process backends (``memory://``,
``file://``), with the single-writer page read every such backend shares.

Nothing here awaits between reading a consumer's row and writing it, so each method is
atomic within the event loop; a projection's writes (`consumer_transaction`) are the
caller's own and cannot share a transaction with the position (at-least-once there). The
file backend makes the rows durable by overriding `consumers_changed`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from eventlog import cursors
from eventlog.errors import ConsumerFenced
from eventlog.records import StoredEvent
from eventlog.storage.contracts.consumers import (
    ConsumerClaim,
    ConsumerRow,
    ConsumerSeal,
    ConsumerStorage,
    decide_claim,
    decide_reset,
)


class PositionCursors(ConsumerStorage):
    """For a single-writer backend: a page's cursors are its events' positions."""

    if TYPE_CHECKING:
        async def read_all(self, after: str | None, limit: int, tenant_id: str | None
                           ) -> tuple[list[StoredEvent], str | None]: ...

    async def read_with_cursors(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> list[tuple[StoredEvent, str]]:
        """`read_all`'s page, each event with ``p:<its position>``."""
        page, _ = await self.read_all(after, limit, tenant_id)
        return [(event, cursors.encode_position(event.position)) for event in page]


class InProcessConsumers(PositionCursors):
    """Consumers' rows in ``self.consumer_rows``, by name."""

    consumer_rows: dict[str, ConsumerRow]

    def consumers_changed(self) -> None:
        """Called after every change of ``consumer_rows`` (the file backend writes them)."""

    def _last_position(self) -> int:
        events: list[StoredEvent] = getattr(self, "events")  # noqa: B009 - the backend's list
        return events[-1].position if events else 0

    async def end_cursor(self) -> str | None:
        last = self._last_position()
        return cursors.encode_position(last) if last else None

    async def claim_consumer(self, claim: ConsumerClaim, seal: ConsumerSeal) -> ConsumerRow:
        row = seal.signed(decide_claim(self.consumer_rows.get(claim.name), claim, seal))
        self._store(row)
        return row

    async def write_consumer(self, row: ConsumerRow, previous: ConsumerRow) -> bool:
        held = self._held(row, previous)
        if held:
            self._store(row)
        return held

    @asynccontextmanager
    async def consumer_transaction(
        self, row: ConsumerRow, previous: ConsumerRow
    ) -> AsyncIterator[Any]:
        if not self._held(row, previous):
            raise ConsumerFenced(row.name, row.token)
        yield None
        if not await self.write_consumer(row, previous):
            raise ConsumerFenced(row.name, row.token)

    async def consumer(self, name: str) -> ConsumerRow | None:
        return self.consumer_rows.get(name)

    async def consumers(self) -> list[ConsumerRow]:
        return [self.consumer_rows[name] for name in sorted(self.consumer_rows)]

    async def reset_consumer(self, name: str, cursor: str | None, now: datetime,
                             seal: ConsumerSeal) -> bool:
        row = self.consumer_rows.get(name)
        if row is not None:
            self._store(seal.signed(decide_reset(row, cursor, now)))
        return row is not None

    async def drop_consumer(self, name: str) -> bool:
        found = self.consumer_rows.pop(name, None) is not None
        if found:
            self.consumers_changed()
        return found

    def _held(self, row: ConsumerRow, previous: ConsumerRow) -> bool:
        stored = self.consumer_rows.get(row.name)
        return stored is not None and stored.token == row.token and (
            previous.signature is None or (stored.signature, stored.cursor) == (
                previous.signature, previous.cursor))

    def _store(self, row: ConsumerRow) -> None:
        self.consumer_rows[row.name] = row
        self.consumers_changed()
