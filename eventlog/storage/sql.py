"""What SQLite and PostgreSQL share: the schema, the view queries and the sequential
append, as SQL text written once (`eventlog.storage.sqltext`). Each dialect's module runs
that text on its own connections and adds its own reads of the log and error translation;
PostgreSQL adds its one-round-trip append and gap-safe log reads.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from eventlog.records import EventEnvelope, StoredEvent
from eventlog.storage import migrate
from eventlog.storage.base import StorageBackend
from eventlog.storage.schema import (
    KEY_TABLE,
    KEYRING_TABLE,
    TREE_TABLES,
    build_metadata,
    view_table_names,
)
from eventlog.storage.sqlhistory import history_shape, place_history
from eventlog.storage.sqltext import (
    Numbered,
    SequentialAppend,
    SqlDialect,
    place_query,
    place_related,
    query_shape,
    quote,
    related_shape,
    unpack_related,
)
from projections.query import ViewQuery, read_related
from projections.thread_history import HistoryQuery, HistoryRow

Held = TypeVar("Held")
"""The connection a backend's `SqlBackend.hold_stream` holds its transaction on."""


class SqlBackend(StorageBackend, abc.ABC, Generic[Held]):
    """A backend whose log and views are SQL tables (SQLite, PostgreSQL)."""

    dialect_name: str
    """SQLAlchemy's name for the database (``sqlite``, ``postgresql``): the schema's flavour."""
    sql_dialect: SqlDialect
    """How the shared SQL text (`eventlog.storage.sqltext`) is written for this database."""

    def __init__(self, *, schema: str | None) -> None:
        self._held: ContextVar[Held | None] = ContextVar(f"eventlog_held_{id(self)}",
                                                         default=None)
        """The connection of the `hold_stream` the current task is inside, if any."""
        self.schema = schema
        self.metadata = build_metadata(self.dialect_name, schema)
        self.tables = self.metadata.tables
        key = f"{schema}." if schema else ""
        self.events = self.tables[f"{key}events"]
        self.blobs = self.tables[f"{key}blobs"]
        self.views = {name: self.tables[f"{key}{name}"] for name in view_table_names()}
        prefix = f"{quote(schema)}." if schema else ""
        self.qualified = {name: prefix + quote(name)
                          for name in ("events", "blobs", *TREE_TABLES, KEY_TABLE, KEYRING_TABLE,
                                       *self.views)}
        self.view_keys = {
            name: [column.name for column in table.primary_key.columns]
            for name, table in self.views.items()
        }
        self.sequential = SequentialAppend(self.qualified, self.view_keys, self.new_param)
        self._queries: dict[Any, str] = {}
        self._nullable = {
            name: frozenset(column.name for column in table.columns if column.nullable)
            for name, table in self.views.items()
        }

    @abc.abstractmethod
    def new_param(self) -> Numbered:
        """A fresh placeholder numbering for one statement."""

    @abc.abstractmethod
    def holding_transaction(
        self, tenant_id: str, stream_id: str
    ) -> AbstractAsyncContextManager[Held]:
        """A write transaction that holds the stream (see `hold_stream`), on its connection."""

    @asynccontextmanager
    async def hold_stream(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        # Every read and append of the calling task inside runs on the holding connection.
        inside = False  # an error of the caller's block passes through as it is
        try:
            async with self.holding_transaction(tenant_id, stream_id) as connection:
                token = self._held.set(connection)
                try:
                    inside = True
                    yield
                    inside = False
                finally:
                    self._held.reset(token)
        except Exception as error:
            if inside:
                raise
            # The commit's failure is the append's: a lost connection leaves it unknown.
            raise self.translate(error, "append") from error

    @abc.abstractmethod
    def translate(self, error: BaseException, operation: str) -> BaseException:
        """The error of ours that ``error`` means; `StreamVersionTaken` for a version race."""

    @abc.abstractmethod
    async def fetch_view_rows(
        self, table: str, sql: str, params: list[Any]
    ) -> list[dict[str, Any]]:
        """Run a view query's text; its rows as plain dicts of our types."""

    async def migrate(self, connection: Any, *, upgrade: bool) -> str:
        """Run the schema check and upgrade on an SQLAlchemy ``AsyncConnection``."""
        revision: str = await connection.run_sync(
            lambda sync: migrate.upgrade_sync(sync, self.schema, self.metadata, upgrade=upgrade)
        )
        return revision

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        if query.table not in self.views:
            raise KeyError(query.table)
        if query.lookup is not None and not query.lookup.keys:
            return []  # no key, no row (and no key set to type)
        if query.related and not self.sql_dialect.nests:
            return await read_related(query, self.query)
        sql, values = self.view_sql(query)
        rows = await self.fetch_query_rows(query, sql, values)
        return unpack_related(query, rows) if query.related else rows

    async def fetch_query_rows(self, query: ViewQuery, sql: str, values: list[Any]
                               ) -> list[dict[str, Any]]:
        """Run ``query``'s text (`view_sql`); a backend may run a kind of query its own
        way (PostgreSQL behind a transaction pooler: a large read without JIT)."""
        return await self.fetch_view_rows(query.table, sql, values)

    def view_sql(self, query: ViewQuery) -> tuple[str, list[Any]]:
        """The text of ``query`` (cached by its shape) and its values (with its related
        tables where the dialect nests them)."""
        param = self.new_param()
        place, shape_of = ((place_related, related_shape) if query.related
                           else (place_query, query_shape))
        text = place(query, self.qualified, self.sql_dialect, param,
                     self._nullable[query.table])
        shape = shape_of(query, self.sql_dialect)
        sql = self._queries.get(shape)
        if sql is None:
            sql = self._queries[shape] = text()
        return sql, param.values

    async def history(self, query: HistoryQuery) -> list[HistoryRow]:
        param = self.new_param()
        text = place_history(query, self.qualified, self.sql_dialect, param)
        shape = history_shape(query)
        sql = self._queries.get(shape)
        if sql is None:
            sql = self._queries[shape] = text()
        return await self.fetch_view_rows("thread_history", sql, param.values)

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        return {
            name: await self.query(ViewQuery(name, order_by=tuple(keys)))
            for name, keys in self.view_keys.items()
        }


EVENT_READ_COLUMNS = tuple(
    "stream_version" if field == "version" else field
    for field in EventEnvelope.__struct_fields__
)
"""The columns `stored_event` reads: the envelope's fields in its order (the ``events``
table calls ``version`` ``stream_version``), so a row builds one positionally."""
SCAN_PAGE = 1000
"""Events per page of `StorageBackend.scan_streams`."""


def prefix_end(prefix: str) -> str:
    """The least text above every text starting with ``prefix`` (compared bytewise, as
    every backend compares text): with ``>= prefix`` the key range of the prefix."""
    while prefix and prefix[-1] == "\U0010ffff":
        prefix = prefix[:-1]
    if not prefix:
        return "\U0010ffff" * 2
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)
CHECKED_COLUMNS = frozenset(
    {"event_id", "stream_version", "recorded_at", "type", "data", "prev_hash", "hash", "actor",
     "signature"})
"""The event columns `stored_event` checks (a tampered row may hold anything there)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def stored_event(row: Any) -> StoredEvent:
    """A `StoredEvent` from a row of (position, event_id, tenant, stream, version,
    recorded_at, type, data, prev_hash, hash, actor, signature); a value of the wrong type
    or format is noted in ``damage`` (with a placeholder) instead of raised."""
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
        actor=read("actor", row[10], _actor, None),
        signature=read("signature", row[11], _optional_bytes, None),
        damage="; ".join(damage) or None,
    )


def _actor(value: Any) -> str | None:
    return None if value is None else _text(value)


def _optional_bytes(value: Any) -> bytes | None:
    return None if value is None else _bytes(value)


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


def normalise_row(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A view row with our types: aware UTC datetimes, bytes for binary values."""
    return {
        name: _aware(value) if isinstance(value, datetime)
        else bytes(value) if isinstance(value, memoryview)
        else value
        for name, value in row.items()
    }
