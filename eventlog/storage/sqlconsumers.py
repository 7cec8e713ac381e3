"""`ConsumerStorage` on the SQL backends: one row per consumer in ``consumers``.

A claim reads the row and writes its decision (`decide_claim`) in one write transaction:
SQLite's ``BEGIN IMMEDIATE`` (one writer), PostgreSQL's row lock (``FOR UPDATE``, or the
primary key deciding between two first claims). Every later write of the holder names its
fencing token in its ``WHERE`` (and, in a log with a writer key, the signature of the row
it wrote last), so a holder that was taken over, or whose row was edited, changes
nothing. A
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
    ConsumerSeal,
    ConsumerStorage,
    damaged_row,
    decide_claim,
    decide_reset,
    decode_types,
    encode_types,
)
from eventlog.storage.schema import CONSUMER_TABLE

COLUMNS = ("name", "scope_tenant", "types", "cursor", "token", "holder", "lease_until",
           "updated_at", "signature")
"""The columns of ``consumers`` in `ConsumerRow`'s order."""


def _aware(moment: Any) -> datetime | None:
    if moment is None:
        return None
    if isinstance(moment, str):  # SQLite's text, as SQLAlchemy stores a time there
        moment = datetime.fromisoformat(moment)
    if not isinstance(moment, datetime):
        raise ValueError(f"{moment!r} is not a time")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _text(value: Any, column: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"its {column} is {type(value).__name__}, not text")
    return value


def consumer_row(row: Any) -> ConsumerRow:
    """A `ConsumerRow` from a row of `COLUMNS` (read with the columns' types, or as raw
    values: SQLite keeps whatever was written). A row that is not readable as written is
    returned as `damaged_row`, so one edited row never fails a listing."""
    try:
        types = decode_types(_text(row[2], "types"))
        token = row[4]
        if isinstance(token, bool) or not isinstance(token, int):
            raise ValueError(f"its token is {token!r}"[:80] + ", not a whole number")
        updated = _aware(row[7])
        if updated is None:
            raise ValueError("it has no update time")
        signature = row[8]
        if signature is not None and not isinstance(signature, bytes):
            signature = bytes(signature) if isinstance(signature, memoryview) else None
            if signature is None:
                raise ValueError("its signature is not bytes")
        return ConsumerRow(name=str(row[0]), tenant_id=_text(row[1], "tenant"), types=types,
                           cursor=_text(row[3], "cursor"), token=token,
                           holder=_text(row[5], "holder"), lease_until=_aware(row[6]),
                           updated_at=updated, signature=signature)
    except (ValueError, TypeError) as error:
        return damaged_row(row[0], f"its row is not readable as written ({error})")


def row_values(row: ConsumerRow) -> dict[str, Any]:
    """``row`` as the table's column values."""
    return {"name": row.name, "scope_tenant": row.tenant_id, "types": encode_types(row.types),
            "cursor": row.cursor, "token": row.token, "holder": row.holder,
            "lease_until": row.lease_until, "updated_at": row.updated_at,
            "signature": row.signature}


def written_values(row: ConsumerRow) -> dict[str, Any]:
    """What a holder's write (`ConsumerStorage.write_consumer`) changes of its row."""
    return {"cursor": row.cursor, "holder": row.holder, "lease_until": row.lease_until,
            "updated_at": row.updated_at, "signature": row.signature}


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

    def _raw_select(self) -> Any:
        # Each column read as stored (no type processing): SQLite keeps whatever a
        # statement wrote, and `consumer_row` judges it rather than the driver failing.
        table = self._consumers
        return sa.select(*(sa.type_coerce(table.c[name], sa.types.NullType()).label(name)
                           for name in COLUMNS))

    async def claim_consumer(self, claim: ConsumerClaim, seal: ConsumerSeal) -> ConsumerRow:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                found = (await connection.execute(
                    self._raw_select().where(table.c.name == claim.name))).first()
                existing = None if found is None else consumer_row(found)
                row = seal.signed(decide_claim(existing, claim, seal))
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

    def _holder_where(self, row: ConsumerRow, previous: ConsumerRow) -> list[Any]:
        table = self._consumers
        where = [table.c.name == row.name, table.c.token == row.token]
        if previous.signature is None:
            return where
        return [*where, table.c.signature == previous.signature,
                table.c.cursor.is_not_distinct_from(previous.cursor)]

    async def write_consumer(self, row: ConsumerRow, previous: ConsumerRow) -> bool:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                result = await connection.execute(sa.update(table).where(
                    *self._holder_where(row, previous)).values(**written_values(row)))
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return bool(result.rowcount == 1)

    @asynccontextmanager
    async def consumer_transaction(
        self, row: ConsumerRow, previous: ConsumerRow
    ) -> AsyncIterator[Any]:
        table = self._consumers
        # BEGIN IMMEDIATE: no other writer (a claim included) until this commits.
        async with self.write_transaction() as connection:
            result = await connection.execute(sa.update(table).where(
                *self._holder_where(row, previous)).values(**written_values(row)))
            if result.rowcount != 1:
                raise ConsumerFenced(row.name, row.token)
            yield connection

    async def consumer(self, name: str) -> ConsumerRow | None:
        table = self._consumers
        async with self.read_connection() as connection:
            found = (await connection.execute(
                self._raw_select().where(table.c.name == name))).first()
        return None if found is None else consumer_row(found)

    async def consumers(self) -> list[ConsumerRow]:
        table = self._consumers
        async with self.read_connection() as connection:
            rows = await connection.execute(self._raw_select().order_by(table.c.name))
            return [consumer_row(row) for row in rows]

    async def reset_consumer(self, name: str, cursor: str | None, now: datetime,
                             seal: ConsumerSeal) -> bool:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                found = (await connection.execute(
                    self._raw_select().where(table.c.name == name))).first()
                if found is None:
                    return False
                row = seal.signed(decide_reset(consumer_row(found), cursor, now))
                values = row_values(row)
                del values["name"]
                await connection.execute(
                    sa.update(table).where(table.c.name == name).values(**values))
        except EventLogError:
            raise
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return True

    async def drop_consumer(self, name: str) -> bool:
        table = self._consumers
        try:
            async with self.write_transaction() as connection:
                result = await connection.execute(sa.delete(table).where(table.c.name == name))
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return bool(result.rowcount == 1)
