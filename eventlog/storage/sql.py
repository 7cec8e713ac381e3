"""What SQLite and PostgreSQL share: the schema, reads and a transactional append, in
SQLAlchemy Core. Each dialect's module adds its own connection handling and error
translation, and PostgreSQL its one-round-trip append and gap-safe log reads.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from eventlog import cursors
from eventlog.records import StoredEvent
from eventlog.storage import migrate
from eventlog.storage.base import AppendRequest, StorageBackend
from eventlog.storage.schema import build_metadata, view_table_names
from projections.changes import Change, Delete, InsertIfAbsent, Update, Upsert, resolve
from projections.query import In, JsonContains, ViewQuery

_SCAN_PAGE = 1000


class SqlBackend(StorageBackend, abc.ABC):
    """A backend over an SQLAlchemy ``AsyncEngine``."""

    dialect: str

    def __init__(self, engine: AsyncEngine, *, owned: bool, schema: str | None) -> None:
        self.engine = engine
        self.owned = owned
        self.schema = schema
        self.metadata = build_metadata(self.dialect, schema)
        self.tables = self.metadata.tables
        key = f"{schema}." if schema else ""
        self.events = self.tables[f"{key}events"]
        self.blobs = self.tables[f"{key}blobs"]
        self.views = {name: self.tables[f"{key}{name}"] for name in view_table_names()}

    # -- connections and errors (per dialect) --------------------------------------------

    @abc.abstractmethod
    def write_transaction(self) -> Any:
        """An async context manager yielding a connection inside a write transaction."""

    @abc.abstractmethod
    def translate(self, error: BaseException, operation: str) -> BaseException:
        """The error of ours that ``error`` means; `StreamVersionTaken` for a version race."""

    @asynccontextmanager
    async def read_connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one or more reads, with driver errors translated."""
        try:
            async with self.engine.connect() as connection:
                yield connection
        except Exception as error:
            raise self.translate(error, "read") from error

    async def close(self) -> None:
        if self.owned:
            await self.engine.dispose()

    async def migrate(self, connection: AsyncConnection, *, upgrade: bool) -> str:
        """Run the schema check and upgrade on ``connection``."""
        revision: str = await connection.run_sync(
            lambda sync: migrate.upgrade_sync(sync, self.schema, self.metadata, upgrade=upgrade)
        )
        return revision

    # -- the append ----------------------------------------------------------------------

    async def append(self, request: AppendRequest) -> list[int]:
        try:
            async with self.write_transaction() as connection:
                return await self.append_in(connection, request)
        except Exception as error:
            raise self.translate(error, "append") from error

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        try:
            async with self.write_transaction() as connection:
                return [await self.append_in(connection, request) for request in requests]
        except Exception as error:
            raise self.translate(error, "append") from error

    async def append_in(self, connection: AsyncConnection, request: AppendRequest) -> list[int]:
        """Insert events, apply view changes and blob references on ``connection``."""
        positions: list[int] = []
        for pending in request.events:
            result = await connection.execute(
                self.events.insert()
                .values(
                    tenant_id=request.tenant_id,
                    stream_id=request.stream_id,
                    stream_version=pending.version,
                    event_id=pending.event_id,
                    type=pending.type,
                    data=pending.data,
                    recorded_at=pending.recorded_at,
                    prev_hash=pending.prev_hash,
                    hash=pending.hash,
                )
                .returning(self.events.c.position)
            )
            positions.append(result.scalar_one())
        for index, change in request.changes:
            await connection.execute(self.change_statement(change, positions[index]))
        await self.apply_blobs(connection, request)
        return positions

    def change_statement(self, change: Change, position: int) -> Any:
        """The statement that applies one view change."""
        table = self.views[change.table]
        if isinstance(change, Upsert | InsertIfAbsent):
            row = resolve(change.row, position)
            keys = [column.name for column in table.primary_key.columns]
            statement = self.dialect_insert(table).values(row)
            if isinstance(change, InsertIfAbsent):
                return statement.on_conflict_do_nothing(index_elements=keys)
            updates = {name: statement.excluded[name] for name in row if name not in keys}
            if not updates:
                return statement.on_conflict_do_nothing(index_elements=keys)
            return statement.on_conflict_do_update(index_elements=keys, set_=updates)
        if isinstance(change, Update):
            return (
                table.update()
                .where(*_equal(table, change.key))
                .values(resolve(change.values, position))
            )
        assert isinstance(change, Delete)
        return table.delete().where(*_equal(table, change.where))

    @abc.abstractmethod
    def dialect_insert(self, table: sa.Table) -> Any:
        """The dialect's INSERT construct (with ``on_conflict_do_*``)."""

    async def apply_blobs(self, connection: AsyncConnection, request: AppendRequest) -> None:
        """Add and release blob references inside the append's transaction.

        Rows are touched in digest order, whatever order the request lists them in: two
        appends locking shared blob rows in opposite orders (two session deletes whose
        checkpoints share states) would otherwise deadlock on PostgreSQL.
        """
        blobs = self.blobs
        for digest in sorted(request.blob_adds.keys() | request.blob_releases.keys()):
            if digest in request.blob_adds:
                payload, count = request.blob_adds[digest]
                insert = self.dialect_insert(blobs).values(
                    tenant_id=request.tenant_id, digest=digest, size=len(payload),
                    refs=count, data=payload,
                )
                await connection.execute(
                    insert.on_conflict_do_update(
                        index_elements=["tenant_id", "digest"],
                        set_={"refs": blobs.c.refs + insert.excluded.refs},
                    )
                )
            if digest in request.blob_releases:
                count = request.blob_releases[digest]
                where = (blobs.c.tenant_id == request.tenant_id, blobs.c.digest == digest)
                await connection.execute(
                    blobs.update().where(*where).values(refs=blobs.c.refs - count))
                await connection.execute(blobs.delete().where(*where, blobs.c.refs <= 0))

    # -- reads ---------------------------------------------------------------------------

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        events = self.events
        async with self.read_connection() as connection:
            row = (
                await connection.execute(
                    sa.select(events.c.stream_version, events.c.hash)
                    .where(events.c.tenant_id == tenant_id, events.c.stream_id == stream_id)
                    .order_by(events.c.stream_version.desc())
                    .limit(1)
                )
            ).first()
        return None if row is None else (int(row[0]), bytes(row[1]))

    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int, limit: int
    ) -> list[StoredEvent]:
        events = self.events
        statement = (
            self._select_events()
            .where(
                events.c.tenant_id == tenant_id,
                events.c.stream_id == stream_id,
                events.c.stream_version >= from_version,
            )
            .order_by(events.c.stream_version)
            .limit(limit)
        )
        return await self._fetch_events(statement)

    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        # One writer at a time (SQLite): positions become visible in commit order.
        events = self.events
        statement = self._select_events().where(events.c.position > cursors.decode_position(after))
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        rows = await self._fetch_events(statement.order_by(events.c.position).limit(limit))
        return rows, cursors.encode_position(rows[-1].position) if rows else after

    async def scan_streams(self, tenant_id: str | None) -> AsyncIterator[StoredEvent]:
        events = self.events
        order = (events.c.tenant_id, events.c.stream_id, events.c.stream_version)
        last: tuple[str, str, int] | None = None
        while True:
            statement = self._select_events().order_by(*order).limit(_SCAN_PAGE)
            if tenant_id is not None:
                statement = statement.where(events.c.tenant_id == tenant_id)
            if last is not None:
                statement = statement.where(sa.tuple_(*order) > sa.tuple_(*last))
            page = await self._fetch_events(statement)
            for stored in page:
                yield stored
            if len(page) < _SCAN_PAGE:
                return
            last = (page[-1].tenant_id, page[-1].stream_id, page[-1].version)

    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        events = self.events
        statement = sa.select(events.c.tenant_id, sa.func.count()).group_by(events.c.tenant_id)
        if tenant_id is not None:
            statement = statement.where(events.c.tenant_id == tenant_id)
        async with self.read_connection() as connection:
            rows = await connection.execute(statement)
            return {str(tenant): int(count) for tenant, count in rows}

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        events = self.events
        rows = await self._fetch_events(
            self._select_events().where(events.c.tenant_id == tenant_id,
                                        events.c.event_id == event_id)
        )
        return rows[0] if rows else None

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        blobs = self.blobs
        async with self.read_connection() as connection:
            value = (
                await connection.execute(
                    sa.select(blobs.c.data).where(
                        blobs.c.tenant_id == tenant_id, blobs.c.digest == digest
                    )
                )
            ).scalar_one_or_none()
        return None if value is None else bytes(value)

    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, blobs.c.data).where(
                    blobs.c.tenant_id == tenant_id, blobs.c.digest.in_(list(digests))
                )
            )
            return {bytes(digest): bytes(data) for digest, data in rows}

    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        blobs = self.blobs
        async with self.read_connection() as connection:
            rows = await connection.execute(
                sa.select(blobs.c.digest, blobs.c.refs).where(blobs.c.tenant_id == tenant_id)
            )
            return {bytes(digest): int(refs) for digest, refs in rows}

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        table = self.views[query.table]
        columns = [table.c[name] for name in query.columns] if query.columns else [table]
        statement = sa.select(*columns).where(*_conditions(table, query.where))
        if query.order_by:
            order = [table.c[name] for name in query.order_by]
            if query.after is not None:
                keyset = sa.tuple_(*order), sa.tuple_(*[sa.literal(v) for v in query.after])
                statement = statement.where(
                    keyset[0] < keyset[1] if query.descending else keyset[0] > keyset[1]
                )
            statement = statement.order_by(
                *[column.desc() if query.descending else column for column in order]
            )
        if query.limit is not None:
            statement = statement.limit(query.limit)
        async with self.read_connection() as connection:
            result = await connection.execute(statement)
            return [_normalise(row._mapping) for row in result]

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        dumped: dict[str, list[dict[str, Any]]] = {}
        async with self.read_connection() as connection:
            for name, table in self.views.items():
                result = await connection.execute(
                    sa.select(table).order_by(*table.primary_key.columns)
                )
                dumped[name] = [_normalise(row._mapping) for row in result]
        return dumped

    def _select_events(self) -> sa.Select[Any]:
        # The driver's values, not SQLAlchemy's type processing: a row whose column was
        # rewritten with another type or format must become a finding of verify, not an
        # exception that ends the scan (`stored_event` converts and notes the damage).
        events = self.events
        return sa.select(*[
            sa.type_coerce(column, sa.types.NullType()).label(column.name)
            if column.name in _CHECKED_COLUMNS else column
            for column in (
                events.c.position, events.c.event_id, events.c.tenant_id, events.c.stream_id,
                events.c.stream_version, events.c.recorded_at, events.c.type, events.c.data,
                events.c.prev_hash, events.c.hash,
            )
        ])

    async def _fetch_events(self, statement: sa.Select[Any]) -> list[StoredEvent]:
        async with self.read_connection() as connection:
            result = await connection.execute(statement)
            return [stored_event(row) for row in result]


_CHECKED_COLUMNS = frozenset(
    {"event_id", "stream_version", "recorded_at", "type", "data", "prev_hash", "hash"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def stored_event(row: Any) -> StoredEvent:
    """A `StoredEvent` from a row of (position, event_id, tenant, stream, version,
    recorded_at, type, data, prev_hash, hash); a value of the wrong type or format is
    noted in ``damage`` (with a placeholder) instead of raised."""
    damage: list[str] = []

    def read(name: str, value: Any, convert: Any, placeholder: Any) -> Any:
        try:
            return convert(value)
        except (TypeError, ValueError, OverflowError) as error:
            damage.append(f"{name} is unreadable ({error})"[:200])
            return placeholder

    return StoredEvent(
        position=int(row[0]),
        event_id=read("event_id", row[1], _uuid, uuid.UUID(int=0)),
        tenant_id=str(row[2]),
        stream_id=str(row[3]),
        version=read("stream_version", row[4], _whole, 0),
        recorded_at=read("recorded_at", row[5], _moment, _EPOCH),
        type=read("type", row[6], _text, "?"),
        data=read("data", row[7], _bytes, b""),
        prev_hash=read("prev_hash", row[8], _bytes, b""),
        hash=read("hash", row[9], _bytes, b""),
        damage="; ".join(damage) or None,
    )


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(_text(value))


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{type(value).__name__} {str(value)[:40]!r} is not a whole number")
    return value


def _moment(value: Any) -> datetime:
    return _aware(value if isinstance(value, datetime) else datetime.fromisoformat(_text(value)))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{type(value).__name__} is not text")
    return value


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{type(value).__name__} is stored where bytes belong")


def _aware(moment: datetime) -> datetime:
    # SQLite stores datetimes without a zone; every time we write is UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _normalise(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {
        name: _aware(value) if isinstance(value, datetime)
        else bytes(value) if isinstance(value, memoryview)
        else value
        for name, value in row.items()
    }


def _equal(table: sa.Table, values: Mapping[str, Any]) -> list[sa.ColumnElement[bool]]:
    return [table.c[name] == value for name, value in values.items()]


def _conditions(table: sa.Table, where: Mapping[str, Any]) -> list[sa.ColumnElement[bool]]:
    conditions: list[sa.ColumnElement[bool]] = []
    for name, value in where.items():
        if isinstance(value, In):
            conditions.append(table.c[name].in_(value.values))
        elif isinstance(value, JsonContains):
            conditions.extend(_json_key_equals(table.c[name], key, wanted)
                              for key, wanted in value.value.items())
        else:
            conditions.append(table.c[name] == value)
    return conditions


def _json_key_equals(column: Any, key: str, wanted: Any) -> sa.ColumnElement[bool]:
    """SQLite's JSON1 test that the object in ``column`` has ``key`` equal to ``wanted``.

    Scalars compare by JSON type and value (a boolean is never a number); nested objects
    and arrays compare as their minified JSON text.
    """
    path = '$."' + key + '"'
    kind = sa.func.json_type(column, path)
    found = sa.func.json_extract(column, path)
    if wanted is None:
        return kind == "null"
    if isinstance(wanted, bool):
        return kind == ("true" if wanted else "false")
    if isinstance(wanted, str):
        return sa.and_(kind == "text", found == wanted)
    if isinstance(wanted, int):
        return sa.and_(kind == "integer", found == wanted)
    if isinstance(wanted, float):
        return sa.and_(kind.in_(("integer", "real")), found == wanted)
    return found == sa.func.json(msgspec.json.encode(wanted).decode())
