"""`ConsumerStorage` on the SQL backends: one row per consumer in ``consumers``.

A claim reads the row and writes its decision (`decide_claim`) in one write transaction:
SQLite's ``BEGIN IMMEDIATE`` (one writer), PostgreSQL's row lock (``FOR UPDATE``, or the
primary key deciding between two first claims). Every later write of the holder names its
fencing token in its ``WHERE``, so a holder that was taken over changes nothing. A
projection's transaction (`consumer_transaction`) locks the row first, under its token,
so the handler's writes and the position commit together or not at all, and never after
another holder's claim.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from eventlog import cursors
from eventlog.errors import ConsumerFenced, EventLogError
from eventlog.records import StoredEvent
from eventlog.storage.contracts.consumers import (
    ConsumerClaim,
    ConsumerRow,
    ConsumerStorage,
    decide_claim,
    decode_types,
    encode_types,
)
from eventlog.storage.schema import CONSUMER_TABLE

COLUMNS = ("name", "scope_tenant", "types", "cursor", "token", "holder", "lease_until",
           "updated_at")
"""The columns of ``consumers`` in `ConsumerRow`'s order."""


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def consumer_row(row: Any) -> ConsumerRow:
    """A `ConsumerRow` from a row of `COLUMNS`."""
    updated = _aware(row[7])
    assert updated is not None
    return ConsumerRow(name=str(row[0]), tenant_id=row[1], types=decode_types(row[2]),
                       cursor=row[3], token=int(row[4]), holder=row[5],
                       lease_until=_aware(row[6]), updated_at=updated)


def row_values(row: ConsumerRow) -> dict[str, Any]:
    """``row`` as the table's column values."""
    return {"name": row.name, "scope_tenant": row.tenant_id, "types": encode_types(row.types),
            "cursor": row.cursor, "token": row.token, "holder": row.holder,
            "lease_until": row.lease_until, "updated_at": row.updated_at}


class SqliteConsumers(ConsumerStorage):
    """`ConsumerStorage` over SQLAlchemy Core on SQLite's connections."""

    if TYPE_CHECKING:
        tables: sa.util.FacadeDict[str, sa.Table]
        schema: str | None
        events: sa.Table

        def read_connection(self) -> AbstractAsyncContextManager[Any]: ...
        def write_transaction(self) -> AbstractAsyncContextManager[Any]: ...
        def translate(self, error: BaseException, operation: str) -> BaseException: ...
        async def read_all(self, after: str | None, limit: int, tenant_id: str | None
                           ) -> tuple[list[StoredEvent], str | None]: ...

    @property
    def _consumers(self) -> sa.Table:
        return self.tables[f"{self.schema}.{CONSUMER_TABLE}" if self.schema else CONSUMER_TABLE]

    async def read_with_cursors(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> list[tuple[StoredEvent, str]]:
        page, _ = await self.read_all(after, limit, tenant_id)
        return [(event, cursors.encode_position(event.position)) for event in page]

    async def end_cursor(self) -> str | None:
        async with self.read_connection() as connection:
            last = (await connection.execute(sa.select(sa.func.max(self.events.c.position)))
                    ).scalar()
        return None if last is None else cursors.encode_position(int(last))

    async def claim_consumer(self, claim: ConsumerClaim) -> ConsumerRow:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                found = (await connection.execute(
                    sa.select(*(table.c[name] for name in COLUMNS)).where(
                        table.c.name == claim.name))).first()
                existing = None if found is None else consumer_row(found)
                row = decide_claim(existing, claim)
                values = row_values(row)
                if existing is None:
                    await connection.execute(sa.insert(table).values(**values))
                else:
                    await connection.execute(sa.update(table).where(
                        table.c.name == claim.name).values(**values))
        except EventLogError:
            raise
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return row

    async def _update(self, name: str, fence: int | None, **values: Any) -> bool:
        table = self._consumers
        where = [table.c.name == name] + ([] if fence is None else [table.c.token == fence])
        try:
            async with self.write_transaction() as connection:
                result = await connection.execute(sa.update(table).where(*where).values(**values))
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return bool(result.rowcount == 1)

    async def renew_consumer(self, name: str, token: int, lease_until: datetime) -> bool:
        return await self._update(name, token, lease_until=lease_until)

    async def ack_consumer(self, name: str, token: int, cursor: str, now: datetime,
                           lease_until: datetime) -> bool:
        return await self._update(name, token, cursor=cursor, updated_at=now,
                                  lease_until=lease_until)

    async def release_consumer(self, name: str, token: int) -> None:
        await self._update(name, token, holder=None, lease_until=None)

    @asynccontextmanager
    async def consumer_transaction(
        self, name: str, token: int, cursor: str, now: datetime, lease_until: datetime
    ) -> AsyncIterator[Any]:
        table = self._consumers
        # BEGIN IMMEDIATE: no other writer (a claim included) until this commits.
        async with self.write_transaction() as connection:
            result = await connection.execute(sa.update(table).where(
                table.c.name == name, table.c.token == token).values(
                cursor=cursor, updated_at=now, lease_until=lease_until))
            if result.rowcount != 1:
                raise ConsumerFenced(name, token)
            yield connection

    async def consumers(self) -> list[ConsumerRow]:
        table = self._consumers
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(*(table.c[name] for name in COLUMNS)).order_by(table.c.name))
            return [consumer_row(row) for row in rows]

    async def reset_consumer(self, name: str, cursor: str | None, now: datetime) -> bool:
        table = self._consumers
        return await self._update(name, None, cursor=cursor, token=table.c.token + 1,
                                  holder=None, lease_until=None, updated_at=now)

    async def drop_consumer(self, name: str) -> bool:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                result = await connection.execute(sa.delete(table).where(table.c.name == name))
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return bool(result.rowcount == 1)
