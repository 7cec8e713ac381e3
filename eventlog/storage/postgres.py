"""PostgreSQL (``postgresql://…``): every statement over asyncpg, from one connection pool.

Our own `ConnectionPool` when we were given a URL; the application's engine's pool when we
were given its engine. SQLAlchemy and Alembic only check and upgrade the schema at open,
on one connection that is closed before the pool opens. Two things are about the log's
hot paths:

* **One round trip per append.** The events, their view changes and blob references are
  sent as ONE statement of data-modifying CTEs and run in autocommit: no BEGIN and COMMIT
  round trips. A view change that needs the event's position reads it from the events
  CTE. A large append (over `MAX_SINGLE_PARTS` events, blobs and changes) goes as ONE
  statement over column arrays, as a batch does, so no size runs into the protocol's
  32,767 parameters. Requests a single statement cannot express (a blob release, two
  changes to one row, a delete beside other changes to its table) take the ordinary
  transaction path.
* **Gap-safe log reads.** A sequence hands out positions at insert, but rows become
  visible at commit, so a reader resuming after the highest position it saw could skip,
  forever, a lower position that commits later (the most reported defect of PostgreSQL
  event stores). Each row records its writer's transaction id; `read_all` returns only
  rows written by transactions older than every transaction of this database still
  running, ordered by (transaction id, position).
  A reader therefore waits behind an open writer instead of skipping past it, but not
  behind a transaction of another database on the same server, which cannot write here.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import asyncpg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from eventlog import cursors
from eventlog.errors import CommitOutcomeUnknown, EventLogError, InvalidInput, StorageError
from eventlog.records import ENVELOPE_SIZE, StoredEvent
from eventlog.storage import pgstream
from eventlog.storage.base import AppendRequest, StreamVersionTaken
from eventlog.storage.contracts import ReplicaStorage
from eventlog.storage.contracts.events import NewestEvent
from eventlog.storage.pgbatch import BatchStatements
from eventlog.storage.pgconsumers import PostgresConsumers
from eventlog.storage.pgpool import ConnectionPool
from eventlog.storage.requests import refusal
from eventlog.storage.sql import (
    EVENT_READ_COLUMNS,
    SCAN_PAGE,
    SqlBackend,
    prefix_end,
    stored_event,
)
from eventlog.storage.sqlkeys import PostgresKeys
from eventlog.storage.sqltext import (
    EVENT_COLUMNS,
    Numbered,
    PostgresDialect,
    Statement,
    blob_add_text,
    blob_row,
    blobs_by_digest,
    change_text,
    event_row,
    place_change,
    quote,
    required_where,
)
from eventlog.storage.sqltree import PostgresTree
from eventlog.telemetry import Database
from projections.changes import (
    Change,
    Delete,
    InsertIfAbsent,
    Update,
    Upsert,
    change_shape,
)
from projections.query import RowRequired, ViewQuery

R = TypeVar("R")
MAX_POOL_SIZE = 1000
"""The most connections one log's pool may hold (PostgreSQL's own default is 100)."""
# The read horizon: the oldest transaction still running in THIS database (or whose
# database we cannot see), else the next transaction id to be assigned. Every transaction
# id below it has ended, or belongs to a backend connected to another database, which can
# never write our tables. See docs/decisions/log.md ("read horizon") for the argument.
# On a hot standby the snapshot's in-progress list is EMPTY (PostgreSQL keeps the
# primary's running ids, as replayed, apart from it) while its xmin is the oldest of them:
# there the horizon is that xmin ("reads from a standby" in docs/decisions/log.md).
# Reads take the greater of it and the backend's `read_floor`: an id whose backend ended
# between the snapshot and the read of pg_stat_activity counts as ours, so for one
# statement the horizon could fall below one an earlier read had (docs/decisions/log.md,
# "a read never shows less").
READ_HORIZON = (
    "(WITH s AS (SELECT pg_current_snapshot() AS snap) SELECT CASE "
    "WHEN pg_is_in_recovery() THEN (SELECT pg_snapshot_xmin(snap) FROM s) ELSE COALESCE("
    "(SELECT min(xip) FROM s, pg_snapshot_xip(s.snap) AS xip WHERE NOT EXISTS ("
    "SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.backend_xid = xid(xip) "
    "AND a.datname <> current_database())), "
    "(SELECT pg_snapshot_xmax(snap) FROM s)) END)"
)
_HORIZON_NOW = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text"
_HORIZON_PASSED = f"SELECT GREATEST({READ_HORIZON}, $2::text::xid8) >= $1::text::xid8"
# Has this server replayed (a standby) or written (a primary) the WAL up to $1?
_REPLAYED = (
    "SELECT COALESCE(pg_last_wal_replay_lsn(), pg_current_wal_lsn()) >= $1::text::pg_lsn"
)
# Ids hold no control characters, so the separator keeps (tenant, stream) pairs apart.
_STREAM_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 0))"
_ADAPTED: Any = AsyncAdapt_asyncpg_dbapi
"""SQLAlchemy's asyncpg dialect wraps asyncpg's errors in its own classes of the same
names (the asyncpg error stays their ``__cause__``, which `_driver_error` prefers)."""
_INTERFACE_ERRORS = frozenset(
    cls for cls in (asyncpg.InterfaceError, sa_exc.InterfaceError,
                    getattr(_ADAPTED, "InterfaceError", None))
    if cls is not None)
"""asyncpg's refusals, connection gone or not: only one saying "closed" counts as lost."""
_CONNECTION_LOST = frozenset(
    cls for cls in (
        asyncpg.ConnectionDoesNotExistError, asyncpg.ConnectionFailureError,
        asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError, asyncpg.CrashShutdownError,
        # A connection the server ended while it sat idle in the pool leaves asyncpg's
        # protocol mid-operation ("cannot switch to state 11; another operation (2) is in
        # progress").
        asyncpg.InternalClientError, getattr(_ADAPTED, "InternalClientError", None),
    ) if cls is not None)
"""The driver errors that mean the connection is gone, matched by exact class: a subclass
names another failure (`asyncpg.ProtocolError`, `asyncpg.OutdatedSchemaCacheError`). Every
`OSError` counts too (`ConnectionResetError`, `BrokenPipeError`: the socket itself)."""
_ROLLED_BACK = ("40P01", "40001")
"""SQLSTATEs of a transaction the server rolled back: deadlock detected, serialization
failure."""
# A named prepared statement missing on, or already taken on, the server connection the
# pooler handed us: what transaction pooling does to a statement cache.
_STATEMENT_GONE = (asyncpg.InvalidSQLStatementNameError, asyncpg.DuplicatePreparedStatementError)
POOL_MODES = ("session", "transaction")
"""How the server is reached: directly or through a session pooler (``session``, the
default), or through a pooler that hands out a server connection per transaction
(``transaction``: PgBouncer's ``pool_mode = transaction``, and the managed poolers)."""
MAX_PARAMS = 32_767
"""The most parameters one statement may carry (the protocol counts them in 16 bits)."""
MAX_SINGLE_PARTS = 64
"""The most events, blob rows and view changes an append sends as one statement of its own
shape; a larger one goes as column arrays (`append_batch`): a statement with thousands of
CTEs takes the server seconds to plan, and its text would be cached for one use."""


class PostgresBackend(SqlBackend[Any], ReplicaStorage, PostgresTree, PostgresKeys,
                      PostgresConsumers):
    """Many processes on many hosts, one PostgreSQL database."""

    name = "postgresql"
    dialect_name = "postgresql"
    sql_dialect = PostgresDialect()
    streams_values = True
    """Whether an append binding a big bytes value stages it through COPY (`pgstream`)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: AsyncEngine | None = None,
        schema: str = "eventlog",
        pool_size: int = 10,
        pool_mode: str = "session",
    ) -> None:
        if url is None and engine is None:
            raise InvalidInput("url", "give a PostgreSQL URL, or an engine (engine=...)")
        if url is not None and engine is not None:
            raise InvalidInput("engine", "give a URL or an engine, not both")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not (
                1 <= pool_size <= MAX_POOL_SIZE):
            # Zero would wait forever for a connection, and the pool is the only one.
            raise InvalidInput("pool_size", f"must be a whole number from 1 to "
                                            f"{MAX_POOL_SIZE}, not {pool_size!r}"[:200])
        self.transaction_pooling = check_pool_mode(pool_mode, engine is not None)
        self.read_horizon = READ_HORIZON
        self._dsn = url
        self._engine = engine
        self._database: Database | None = None
        self._pool_size = pool_size
        # Behind a transaction pooler a server connection serves this client for one
        # transaction at a time, so nothing may outlive one: no named prepared statement.
        self._connect_options: dict[str, Any] = (
            {"statement_cache_size": 0} if self.transaction_pooling else {})
        # Connections open on demand, so the pool can exist before `open` (a replica is
        # asked how far it has replayed before it is opened).
        self._pool = (ConnectionPool(url, pool_size, setup=session_setup(
                          url, self.transaction_pooling), **self._connect_options)
                      if url is not None else None)
        self._statements: dict[tuple[Any, ...], str] = {}
        super().__init__(schema=schema)
        tables = {**self.views, "events": self.events, "blobs": self.blobs}
        self._batches = BatchStatements(self.qualified, tables, self.view_keys)
        # The primary keys a plain insert of `NEW_AS_A_RULE` may meet (PostgreSQL names
        # a key it is not told to name <table>_pkey).
        self._plain_keys = frozenset(
            self.views[name].primary_key.name or f"{name}_pkey" for name in NEW_AS_A_RULE)
        # The highest transaction id a read of this backend returned a row of, plus one:
        # every later read shows at least what it showed (`read_floor`).
        self.read_floor = 0
        self._read_all_sql = self._build_read_all_sql(tenant=False)
        self._read_all_tenant_sql = self._build_read_all_sql(tenant=True)
        events = self.qualified["events"]
        self._select_events = f"SELECT {', '.join(EVENT_READ_COLUMNS)} FROM {events}"
        self._head_sql = (f"SELECT stream_version, hash FROM {events} WHERE tenant_id = $1 "
                          "AND stream_id = $2 ORDER BY stream_version DESC LIMIT 1")
        self._reserve_sql = (
            f"INSERT INTO {events} (tenant_id, stream_id, stream_version, event_id, type, "
            "data, recorded_at, prev_hash, hash) SELECT $1::text, $2::text, "
            "COALESCE(max(stream_version), 0) + 1, $3, 'reserved', ''::bytea, now(), "
            f"''::bytea, ''::bytea FROM {events} WHERE tenant_id = $1::text "
            "AND stream_id = $2::text "
            "RETURNING position")
        self._unreserve_sql = f"DELETE FROM {events} WHERE position = $1"

    @property
    def database(self) -> Database:
        """The database and the log's schema (``{database}|{schema}``, the conventions'
        PostgreSQL namespace) and the host and port the URL (or the engine) names: the
        address as configured (a pooler's, behind PgBouncer), never its credentials."""
        if self._database is None:
            self._database = postgres_database(self._dsn, self._engine, self.schema)
        return self._database

    def new_param(self) -> Numbered:
        return Numbered()

    async def open(self, *, upgrade: bool) -> str:
        try:
            # Alembic needs SQLAlchemy: one unpooled connection (or the application's
            # engine), gone before our pool opens, so we never hold two pools.
            # asyncpg reads the URL, as it does for the pool (libpq parameters such as
            # application_name or sslmode included).
            engine = self._engine or self._migration_engine()
            try:
                async with engine.begin() as connection:
                    # Serialize schema creation across every process and host.
                    await connection.execute(
                        sa.text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                        {"key": f"checkpoint-eventlog:migrate:{self.schema}"},
                    )
                    if upgrade and not await _schema_exists(connection, self.schema):
                        # Only when missing: CREATE SCHEMA IF NOT EXISTS asks for CREATE on
                        # the database even when the schema is there (an application role
                        # without it could not open its log), and on Citus it is DDL sent
                        # to every worker, a distributed commit on each open (seconds).
                        await connection.execute(
                            sa.text(f"CREATE SCHEMA IF NOT EXISTS {quote(self.schema or '')}")
                        )
                    revision = await self.migrate(connection, upgrade=upgrade)
            finally:
                if self._engine is None:
                    await engine.dispose()
            return revision
        except EventLogError:
            raise
        except Exception as error:
            raise self.translate(error, "open") from error

    def _migration_engine(self) -> AsyncEngine:
        """An unpooled engine on our URL for the schema check and upgrade at open."""
        dsn, options = self._dsn, self._connect_options
        if not self.transaction_pooling:
            return create_async_engine("postgresql+asyncpg://", poolclass=NullPool,
                                       async_creator=lambda: asyncpg.connect(dsn))
        # SQLAlchemy prepares every statement under a name. Uncached, each is prepared and
        # run inside the one transaction at open; a random name cannot meet a statement
        # another client (another process counting from 1 too) left on the same server
        # connection. `async_creator` cannot pass the dialect these, so this is its body.
        engine: AsyncEngine

        def creator() -> Any:
            dbapi: Any = engine.sync_engine.dialect.dbapi
            return dbapi.connect(
                async_creator_fn=lambda: asyncpg.connect(dsn, **options),
                prepared_statement_cache_size=0,
                prepared_statement_name_func=lambda: f"__eventlog_{uuid.uuid4().hex}__",
            )

        engine = create_async_engine("postgresql+asyncpg://", poolclass=NullPool,
                                     creator=creator)
        return engine

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    @asynccontextmanager
    async def driver_connection(self) -> AsyncIterator[Any]:
        """A raw asyncpg connection: from our own pool when we own the connections,
        else the one under a pooled connection of the application's engine; inside
        `hold_stream`, the holding transaction's."""
        held = self._held.get()
        if held is not None:
            yield held
            return
        if self._pool is not None:
            async with self._pool.connection() as driver:
                yield driver
            return
        assert self._engine is not None
        async with self._engine.connect() as connection:
            fairy = await connection.get_raw_connection()
            yield fairy.driver_connection

    # -- the append ----------------------------------------------------------------------

    @asynccontextmanager
    async def holding_transaction(self, tenant_id: str, stream_id: str) -> AsyncIterator[Any]:
        # The stream's transaction lock queues holders and fallback appends
        # (`append_at_head`). Every other append of the stream inserts its first event
        # at the next version before it touches anything else: the holder reserves that
        # version with a row it inserts and deletes at once (invisible to everyone, to
        # itself too, yet still in the unique index until this transaction ends), so such
        # an append waits on it holding nothing, then fails as a lost race and retries.
        # Its own append reuses the version freely (a key it deleted itself).
        async with self.driver_connection() as driver:
            transaction = await self._take_turn(driver, tenant_id, stream_id)
            try:
                yield driver
            except BaseException:
                await _rolled_back(transaction)
                raise
            await transaction.commit()

    async def _take_turn(self, driver: Any, tenant_id: str, stream_id: str) -> Any:
        """Begin a transaction that holds the stream's lock and has reserved its next
        version (see `holding_transaction`); the asyncpg transaction, to end.

        A reservation that loses its version to an append committing first starts the
        whole transaction again rather than trying the next version in a savepoint: the
        reserving insert gave the transaction its id, and the log reads in transaction id
        order (`read_all`), so an event appended later under that older id would be read
        before the versions that beat it (a stream read out of version order: a follower
        saw version 11 before 10 in a CI run).
        """
        while True:
            transaction = driver.transaction()
            await transaction.start()
            try:
                await driver.execute(_STREAM_LOCK, tenant_id, stream_id)
                position = await driver.fetchval(
                    self._reserve_sql, tenant_id, stream_id, uuid.uuid4())
                await driver.execute(self._unreserve_sql, position)
                return transaction
            except BaseException as error:
                await _rolled_back(transaction)
                if not isinstance(error, asyncpg.UniqueViolationError):
                    raise  # a lost reservation goes round again; anything else ends it

    async def append(self, request: AppendRequest) -> list[int]:
        statement = self.single_statement(request, plain=True)
        if statement is None:
            return (await self.append_batch([request]))[0]
        try:
            rows = await self._append_statement(*statement, request=request)
        except _RowTaken:
            # A view row the plain insert expected to be new was there (a put of a
            # checkpoint id again, writes of a task again): nothing was written; the same
            # statement with its conflict clauses decides what the row becomes.
            statement = self.single_statement(request)
            assert statement is not None  # the same shape, only its clauses differ
            rows = await self._append_statement(*statement, request=request)
        return [int(row[0]) for row in rows]

    async def _append_statement(
        self, sql: str, params: list[Any], *, request: AppendRequest | None = None
    ) -> list[Any]:
        """Run one append statement (never retried here: the log resolves a lost commit).
        One binding a big bytes value stages it through COPY first (`pgstream`)."""
        big = pgstream.streamed(sql, params) if self.streams_values else None
        try:
            async with self.driver_connection() as driver:
                # Inside a hold, a savepoint: a statement the server rolls back (a
                # deadlock) must not abort the holding transaction.
                held = (driver.transaction()
                        if self._held.get() is not None or big is not None else None)
                async with held or contextlib.nullcontext():
                    if big is not None:
                        await pgstream.stage(driver, big.staged)
                        sql, params = big.sql, big.params
                    rows: list[Any] = await driver.fetch(sql, *params)
                    if big is not None:
                        await driver.execute(pgstream.DROP)
                return rows
        except Exception as error:
            refused = None if request is None else _gate_refusal(request, error)
            if refused is not None:
                raise refused from None
            driver = _driver_error(error)
            if (isinstance(driver, asyncpg.UniqueViolationError)
                    and getattr(driver, "constraint_name", None) in self._plain_keys):
                raise _RowTaken from error
            raise self.translate(error, "append") from error

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        statement = self._batches.build(requests, lambda c: _coalesce(c, self.view_keys))
        if statement is None:
            return await self._append_in_transaction(requests)
        rows = await self._append_statement(*statement)
        by_event = {(row[1], row[2], int(row[3])): int(row[0]) for row in rows}
        return [
            [by_event[(r.tenant_id, r.stream_id, pending.version)] for pending in r.events]
            for r in requests
        ]

    async def _append_in_transaction(
        self, requests: Sequence[AppendRequest]
    ) -> list[list[int]]:
        """The requests as sequential statements in one transaction: what one statement
        cannot express (a blob release, two changes to one row, a delete beside other
        changes to its table)."""
        try:
            async with self.driver_connection() as driver, driver.transaction():
                return [
                    await _run_statements(self.sequential.statements(request), driver)
                    for request in requests
                ]
        except Exception as error:
            raise self.translate(error, "append") from error

    async def append_at_head(
        self, tenant_id: str, stream_id: str,
        build: Callable[[tuple[int, bytes] | None], AppendRequest],
    ) -> tuple[AppendRequest, list[int]]:
        # The appends of one stream that fell back here queue on a transaction lock of
        # the stream, so none of them reads a head another of them moves before it
        # commits: they take turns instead of racing (an unfenced append that retried
        # 64 times could lose every race to writers that do not re-read the head). The
        # turn's holder also reserves the next version, as `hold_stream` does: a writer
        # that knows the head and appends at once (no lock) would otherwise take that
        # version between this read and this insert, again and again while the stream is
        # busy (1 of 3,479 puts from six processes lost all 64 tries in a quiet CI run);
        # now it waits on the reservation and retries instead.
        try:
            async with self.holding_transaction(tenant_id, stream_id) as driver:
                row = await driver.fetchrow(self._head_sql, tenant_id, stream_id)
                request = build(None if row is None else (int(row[0]), bytes(row[1])))
                statement = self.single_statement(request)
                if statement is None:
                    positions = await _run_statements(self.sequential.statements(request),
                                                      driver)
                else:
                    sql, params = statement
                    try:
                        found = await driver.fetch(sql, *params)
                    except asyncpg.NotNullViolationError as error:
                        raise _gate_refusal(request, error) or error from None
                    positions = [int(row[0]) for row in found]
        except Exception as error:
            raise self.translate(error, "append") from error
        return request, positions

    async def stream_heads(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        rows = await self._fetch(
            "read",
            "SELECT u.t, u.s, h.stream_version, h.hash "
            "FROM unnest($1::text[], $2::text[]) AS u(t, s) CROSS JOIN LATERAL ("
            f"SELECT stream_version, hash FROM {self.qualified['events']} "
            "WHERE tenant_id = u.t AND stream_id = u.s "
            "ORDER BY stream_version DESC LIMIT 1) AS h",
            [[key[0] for key in keys], [key[1] for key in keys]],
        )
        return {(row[0], row[1]): (int(row[2]), bytes(row[3])) for row in rows}

    def single_statement(self, request: AppendRequest, *, plain: bool = False
                         ) -> tuple[str, list[Any]] | None:
        """The whole append as one statement and its parameters, or None if it cannot be.

        The SQL text depends only on the request's shape, so it is built once per shape
        and cached; asyncpg then reuses its prepared statement for every such append.
        ``plain``: the rows of the tables whose rows are new as a rule (`NEW_AS_A_RULE`)
        are inserted without a conflict clause (`append` writes the statement again with
        them when one was there).
        """
        changes = _coalesce(request.changes, self.view_keys)
        if changes is None or request.blob_releases or len(request.required) > 1 or (
                len(request.events) + len(request.blob_adds) + len(changes) > MAX_SINGLE_PARTS):
            return None
        param = Numbered()
        text = self._place_statement(request, changes, param, plain=plain)
        if len(param.values) > MAX_PARAMS:
            return None  # column arrays carry any size in a few parameters
        shape = (
            plain,
            len(request.events),
            blob_shape(request),
            tuple(change_shape(change) for _, change in changes),
            tuple((required.table, tuple(required.where)) for required in request.required),
        )
        sql = self._statements.get(shape)
        if sql is None:
            sql = self._statements[shape] = text()
        return sql, param.values

    def _place_statement(
        self, request: AppendRequest, changes: list[tuple[int, Change]], param: Numbered,
        *, plain: bool = False,
    ) -> Callable[[], str]:
        """Record the single statement's values through ``param``; what writes its text."""
        tenant, stream = request.tenant_id, request.stream_id
        rows = [param.extend(event_row(tenant, stream, pending)) for pending in request.events]
        gates: list[str] = []
        for required in request.required:  # at most one (`single_statement`)
            # The requirement gates the first event's type: NULL when the row is missing,
            # so the insert fails (not_null_violation on events.type, `_gate_refusal`)
            # and the statement writes nothing. Its subquery reads a table, so it is
            # evaluated as the statement runs, never folded while it is planned.
            slots = param.extend(required.where.values())
            probe = self._key_probe(required, slots)
            if probe is not None:
                gates.append(f"g AS ({probe})")
                rows[0][_GATED] = f"(SELECT {rows[0][_GATED]} WHERE NOT EXISTS (SELECT FROM g))"
                continue
            where = required_where(required, slots)
            rows[0][_GATED] = (f"(SELECT {rows[0][_GATED]} WHERE EXISTS (SELECT FROM "
                               f"{self.qualified[required.table]} WHERE {where}))")
        # Blob rows locked in digest order, as in the sequential append (its `statements`):
        # PostgreSQL runs the data-modifying CTEs the main query does not read in the
        # REVERSE of their order in the statement, so they are listed in descending order.
        # (Listed ascending, a put locked shared blob rows in the opposite order to a
        # delete releasing them, and the two deadlocked: issue 21, item 5.)
        # The blobs the digest tells (count 0) are stored if absent (`DO NOTHING` takes no
        # lock on a row already there); listed after the counted ones, they run first,
        # so the counted rows are still locked in digest order after them.
        blobs = [(count != 0, param.extend(blob_row(tenant, digest, payload, count)))
                 for counted in (True, False)
                 for digest, (payload, count) in sorted(request.blob_adds.items(), reverse=True)
                 if (count != 0) == counted]
        # An `AT_POSITION` value is recorded as its event's version, which finds the
        # position the events CTE assigned.
        placed = [(change, place_change(change, param, request.events[index].version))
                  for index, change in changes]

        def text() -> str:
            values = ", ".join("(" + ", ".join(row) + ")" for row in rows)
            ctes = [*gates,
                    f"e AS (INSERT INTO {self.qualified['events']} ({', '.join(EVENT_COLUMNS)}) "
                    f"VALUES {values} RETURNING position, stream_version)"]
            ctes += [f"b{number} AS "
                     f"({blob_add_text(self.qualified['blobs'], slots, counted=counted)})"
                     for number, (counted, slots) in enumerate(blobs)]
            for number, (change, slots) in enumerate(placed):
                table, keys = self.qualified[change.table], self.view_keys[change.table]
                sql = change_text(change, table, keys, slots, _position_of,
                                  event_inserted=True,
                                  plain=plain and change.table in NEW_AS_A_RULE)
                ctes.append(f"c{number} AS ({sql})")
            return f"WITH {', '.join(ctes)} SELECT position FROM e ORDER BY stream_version"
        return text

    def _key_probe(self, required: RowRequired, slots: Sequence[str]) -> str | None:
        """The requirement as an insert of its row's key that conflicts when the row is
        there, when it names a whole primary key (else None: a query, `required_where`).

        Why: a ``WHERE key = …`` lookup is planned, and asyncpg prepares every statement;
        the generic plan PostgreSQL caches for it, made while the table was small and
        analyzed, scanned the whole table at every put as it grew (an element-stored
        delta's base: 162,486 rows of ``thread_channel_values`` over a chat graph's puts,
        `tests/test_postgres_write_scans.py`). The conflict arbiter is the unique index,
        never planned. When the row is there the probe writes nothing (its conflict is
        found before any insert); when it is missing it inserts a stand-in row (its other
        columns the emptiest values of their types), the gate closes, and the statement
        fails and rolls the stand-in back with everything else."""
        table = self.views.get(required.table)
        keys = self.view_keys.get(required.table)
        if table is None or keys is None or set(keys) != set(required.where):
            return None
        names = list(required.where)
        values = list(slots)
        for column in table.columns:
            if column.name in required.where or column.nullable or column.server_default:
                continue
            filler = _stand_in(column.type)
            if filler is None:
                return None
            names.append(column.name)
            values.append(filler)
        return (f"INSERT INTO {self.qualified[required.table]} "
                f"({', '.join(map(quote, names))}) VALUES ({', '.join(values)}) "
                f"ON CONFLICT ({', '.join(map(quote, keys))}) DO NOTHING RETURNING 1")

    # -- reads the stores make on every call: raw asyncpg, one round trip each ----------

    async def fetch_view_rows(
        self, table: str, sql: str, params: list[Any], settings: str | None = None
    ) -> list[dict[str, Any]]:
        rows = await self._fetch("read", sql, params, settings=settings)
        return [dict(row.items()) for row in rows]

    async def fetch_query_rows(self, query: ViewQuery, sql: str, values: list[Any]
                               ) -> list[dict[str, Any]]:
        # Our own session connections have JIT off (`NO_JIT`); a transaction pooler's
        # and an application engine's are not ours to set, so a read with related rows
        # whose estimate may pass jit_above_cost (a whole thread's checkpoints: ~850 a
        # row) turns it off for its own transaction.
        large = query.related and (query.limit is None or query.limit > SMALL_RELATED_READ)
        own_session = not (self.transaction_pooling or self._pool is None)
        return await self.fetch_view_rows(
            query.table, sql, values, None if own_session or not large else LOCAL_NO_JIT)

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        rows = await self._fetch(
            "read",
            f"SELECT data FROM {self.qualified['blobs']} WHERE tenant_id = $1 AND digest = $2",
            [tenant_id, digest],
        )
        return bytes(rows[0][0]) if rows else None

    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        rows = await self._fetch("read", self._blobs_sql("data"), [tenant_id, list(digests)])
        return {bytes(row[0]): bytes(row[1]) for row in rows}

    def _blobs_sql(self, what: str) -> str:
        """The digest and ``what`` (of ``data``) of each of the tenant's blobs whose
        digest is in ``$2`` (`blobs_by_digest`)."""
        return (f"SELECT d.digest, {what} FROM "
                f"{blobs_by_digest('$2', self.qualified['blobs'], '$1', 'b')}")

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        rows = await self._fetch(
            "read", self._blobs_sql("octet_length(data)"), [tenant_id, list(digests)])
        return {bytes(row[0]): int(row[1] or 0) for row in rows}

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        rows = await self._fetch("read", self._head_sql, [tenant_id, stream_id])
        return (int(rows[0][0]), bytes(rows[0][1])) if rows else None

    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int, limit: int
    ) -> list[StoredEvent]:
        rows = await self._fetch(
            "read",
            f"{self._select_events} WHERE tenant_id = $1 AND stream_id = $2 "
            "AND stream_version >= $3 ORDER BY stream_version LIMIT $4",
            [tenant_id, stream_id, from_version, limit],
        )
        return [stored_event(row) for row in rows]

    async def scan_streams(self, tenant_id: str | None, prefix: str = ""
                           ) -> AsyncIterator[StoredEvent]:
        order = f" ORDER BY tenant_id, stream_id, stream_version LIMIT {SCAN_PAGE}"
        after = "(tenant_id, stream_id, stream_version) > ($1, $2, $3)"
        if tenant_id is None:
            scope: list[Any] = []
            first, following = self._select_events, f"{self._select_events} WHERE {after}"
        else:
            scope = [tenant_id]
            first = f"{self._select_events} WHERE tenant_id = $1"
            following = f"{self._select_events} WHERE tenant_id = $4 AND {after}"
        if prefix:
            # Text compares bytewise here (migration 0006), so the prefix is a key range.
            at = len(scope)
            scope += [prefix, prefix_end(prefix)]
            where = "stream_id >= ${} AND stream_id < ${}"
            first += (" AND " if scope[:at] else " WHERE ") + where.format(at + 1, at + 2)
            following += " AND " + where.format(at + 4, at + 5)
        page = await self._fetch("read", first + order, scope)
        while True:
            for row in page:
                yield stored_event(row)
            if len(page) < SCAN_PAGE:
                return
            last = page[-1]
            page = await self._fetch("read", following + order,
                                     [last[2], last[3], last[4], *scope])

    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        events = self.qualified["events"]
        if tenant_id is None:
            rows = await self._fetch(
                "read", f"SELECT tenant_id, count(*) FROM {events} GROUP BY tenant_id", [])
        else:
            rows = await self._fetch(
                "read", f"SELECT tenant_id, count(*) FROM {events} WHERE tenant_id = $1 "
                "GROUP BY tenant_id", [tenant_id])
        return {str(row[0]): int(row[1]) for row in rows}

    async def signing_starts(self, tenant_id: str | None) -> dict[str, int]:
        sql = (f"SELECT tenant_id, min(position) FROM {self.qualified['events']} "
               "WHERE signature IS NOT NULL ")
        if tenant_id is None:
            rows = await self._fetch("read", sql + "GROUP BY tenant_id", [])
        else:
            rows = await self._fetch("read", sql + "AND tenant_id = $1 GROUP BY tenant_id",
                                     [tenant_id])
        return {str(row[0]): int(row[1]) for row in rows}

    async def events_newest_first(self, tenant_id: str, before: int | None, limit: int
                                  ) -> list[NewestEvent]:
        # Newest first in log order, (writer transaction, position): the tenant's log-order
        # index read backwards (there is no (tenant, position) index here). The tenant is a
        # closed range ordered on, not an equality, so no other index can serve the order
        # (with statistics of a one-tenant table the planner took events_log_order and
        # filtered by tenant). ``before`` is an event of the tenant; the walk goes on below
        # where it stands in that order.
        # (Citus keeps the equality: it is what routes the read to the tenant's worker.)
        events = self.qualified["events"]
        tenant = ("tenant_id = $1" if "tenant_id" in self.sql_dialect.kept_equal
                  else "tenant_id >= $1 AND tenant_id <= $1")
        select = (f"SELECT stream_id, stream_version, position, actor FROM {events} "
                  f"WHERE {tenant}")
        order = " ORDER BY tenant_id DESC, tx_id DESC, position DESC LIMIT $2"
        if before is None:
            rows = await self._fetch("read", select + order, [tenant_id, limit],
                                    settings=UNSORTED)
        else:
            rows = await self._fetch(
                "read", f"{select} AND (tx_id, position) < (SELECT tx_id, position "
                f"FROM {events} WHERE tenant_id = $1 AND position = $3){order}",
                [tenant_id, limit, before], settings=UNSORTED)
        return [(str(row[0]), int(row[1]), int(row[2]), row[3]) for row in rows]

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        rows = await self._fetch(
            "read", f"{self._select_events} WHERE tenant_id = $1 AND event_id = $2",
            [tenant_id, event_id])
        return stored_event(rows[0]) if rows else None

    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        rows = await self._fetch(
            "read", f"SELECT digest, refs FROM {self.qualified['blobs']} WHERE tenant_id = $1",
            [tenant_id])
        return {bytes(row[0]): int(row[1]) for row in rows}

    async def blob_refs_page(
        self, tenant_id: str, after: bytes, limit: int
    ) -> list[tuple[bytes, int]]:
        rows = await self._fetch(
            "read", f"SELECT digest, refs FROM {self.qualified['blobs']} WHERE tenant_id = $1 "
            "AND digest > $2 ORDER BY digest LIMIT $3", [tenant_id, after, limit])
        return [(bytes(row[0]), int(row[1])) for row in rows]

    async def _fetch(self, operation: str, sql: str, params: list[Any], *,
                     settings: str | None = None) -> list[Any]:
        # A read is safe to repeat: one whose connection the server had ended (a restart,
        # pg_terminate_backend) is tried again on another; each dead one is dropped, so
        # a pool full of them costs at most its size in retries.
        attempts = self._pool_size + 1
        for attempt in range(attempts):
            try:
                async with self.driver_connection() as driver:
                    if settings is not None:
                        return await _fetch_with(driver, sql, params, settings)
                    rows: list[Any] = await driver.fetch(sql, *params)
                    return rows
            except Exception as error:
                if attempt + 1 < attempts and _connection_lost(error):
                    continue
                raise self.translate(error, operation) from error
        raise AssertionError("unreachable")

    async def wait_readable(self, max_wait: float) -> bool:
        # read_all shows a commit only once every older transaction on the server ended;
        # polling is the only way to learn when other sessions end.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        try:
            async with self.driver_connection() as driver:
                horizon = await driver.fetchval(_HORIZON_NOW)
                while not await driver.fetchval(_HORIZON_PASSED, horizon,
                                                str(self.read_floor)):
                    if loop.time() > deadline:
                        return False
                    await asyncio.sleep(0.005)
        except Exception as error:
            raise self.translate(error, "read") from error
        # Once passed, reads stay past it: every transaction of this database below it
        # had ended, and no id below it is handed out again, so one still running later
        # is another database's (the read floor's argument: docs/decisions/log.md). A
        # read right after no longer depends on its own look at the server's activity.
        self.read_floor = max(self.read_floor, int(horizon))
        return True

    async def replication_mark(self) -> str | None:
        rows = await self._fetch("read", "SELECT pg_current_wal_lsn()::text", [])
        return str(rows[0][0])

    async def wait_replayed(self, mark: str, max_wait: float) -> bool:
        # Replay on a standby moves on by itself; polling its position is all there is.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        while not (await self._fetch("read", _REPLAYED, [mark]))[0][0]:
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    # -- gap-safe reads ------------------------------------------------------------------

    def _build_read_all_sql(self, *, tenant: bool) -> str:
        tenant_filter = "AND e.tenant_id = $5 " if tenant else ""
        # The transaction id goes out as text (asyncpg has no xid8 codec) under a name of
        # its own, and ORDER BY names the table's columns: an output column named `tx_id`
        # would shadow the column in ORDER BY and sort the page as text ('100000' <
        # '29169'), so the cursor would jump past every shorter id for good.
        return (
            "SELECT e.position, e.event_id, e.tenant_id, e.stream_id, e.stream_version, "
            "e.recorded_at, e.type, e.data, e.prev_hash, e.hash, e.actor, e.signature, "
            "e.tx_id::text AS cursor_tx "
            f"FROM {self.qualified['events']} AS e "
            f"WHERE e.tx_id < GREATEST({READ_HORIZON}, $4::text::xid8) "
            f"AND (e.tx_id, e.position) > ($1::text::xid8, $2::bigint) {tenant_filter}"
            "ORDER BY e.tx_id, e.position LIMIT $3"
        )

    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        rows = await self.read_rows(after, limit, tenant_id)
        events = [_stored(row) for row in rows]
        if not rows:
            return events, after
        return events, cursors.encode_xid(int(rows[-1][ENVELOPE_SIZE]), int(rows[-1][0]))

    async def read_rows(self, after: str | None, limit: int,
                        tenant_id: str | None) -> list[Any]:
        """The rows of a `read_all` page (each an event's columns, then its transaction id
        as text), raising `read_floor` past the last one's transaction."""
        tx_id, position = cursors.decode_xid(after)
        args: list[Any] = [str(tx_id), position, limit, str(self.read_floor)]
        sql = self._read_all_sql
        if tenant_id is not None:
            args.append(tenant_id)
            sql = self._read_all_tenant_sql
        rows = await self._fetch("read", sql, args)
        if rows:
            # Rows come in transaction order: the last one's is the highest.
            self.read_floor = max(self.read_floor, int(rows[-1][ENVELOPE_SIZE]) + 1)
        return rows

    # -- errors --------------------------------------------------------------------------

    def translate(self, error: BaseException, operation: str) -> BaseException:
        if isinstance(error, EventLogError | StreamVersionTaken):
            return error
        driver = _driver_error(error)
        constraint = getattr(driver, "constraint_name", None)
        if constraint == "events_stream_version_key":
            return StreamVersionTaken()
        if constraint == "events_event_id_key":
            # Our own event ids are already stored: an earlier attempt whose outcome we
            # never heard did commit. The log looks them up and reports that append.
            return CommitOutcomeUnknown("postgresql", operation, "event ids already stored")
        state = getattr(driver, "sqlstate", None)
        if operation == "append" and self._held.get() is not None and state in _ROLLED_BACK:
            # In a hold, another transaction is mid-append to what we write: the holder
            # gives way (its caller decides again later, `hold_stream`).
            return StreamVersionTaken("busy")
        if operation == "append" and state in _ROLLED_BACK:
            # The server rolled the append back to break a deadlock (or a serialization
            # failure): nothing was written, and the log retries it like a lost race.
            return StreamVersionTaken("deadlock")
        detail = f"{type(driver).__name__}: {driver}"
        if isinstance(driver, _STATEMENT_GONE) and not self.transaction_pooling:
            # asyncpg's own hint names its connect options, which our callers never see.
            first_line = str(driver).splitlines()[0] if str(driver) else ""
            detail = (f"{type(driver).__name__}: {first_line} (behind PgBouncer or another "
                      "pooler in transaction mode? add ?pool_mode=transaction to the URL)")
        if operation == "append" and _connection_lost(error):
            return CommitOutcomeUnknown("postgresql", operation, detail)
        return StorageError("postgresql", operation, detail)


NO_JIT = "SET jit = off"
"""What each connection of our own pool runs first, unless it is shared by transaction
(docs/decisions/storage.md, "No JIT on the log's connections")."""


LOCAL_NO_JIT = "SET LOCAL jit = off"
"""`NO_JIT` for one read's own transaction, where the session is not ours to set."""
UNSORTED = "SET LOCAL enable_sort = off"
"""Sorting off for one read's own transaction: a walk that must stop after its LIMIT."""


SMALL_RELATED_READ = 100
"""The most rows a read with related rows may ask for and still be planned below
PostgreSQL's default ``jit_above_cost`` (100,000; a thread checkpoint with its channel
values and writes is estimated at ~850)."""


def session_setup(url: str, transaction_pooling: bool) -> str | None:
    """The statement a new pool connection runs first: `NO_JIT`, unless a transaction
    pooler shares the server connection (a session setting would outlive our
    transaction and reach another client's) or the URL sets ``jit`` itself (a ``jit``
    parameter, or ``-c jit=…`` in ``options``: the deployment's choice stands)."""
    if transaction_pooling:
        return None
    for name, value in parse_qsl(urlsplit(url).query):
        if name == "jit" or (name == "options" and "jit" in value):
            return None
    return NO_JIT


def check_pool_mode(pool_mode: Any, engine: bool) -> bool:
    """Whether ``pool_mode`` (one of `POOL_MODES`) is ``transaction``; `InvalidInput`
    otherwise, and for an application's engine, whose connections its own options make."""
    if pool_mode == "statement":
        raise InvalidInput("pool_mode", "'statement' pooling cannot run a transaction, which "
                                        "appends need; use 'transaction' pooling")
    if not isinstance(pool_mode, str) or pool_mode not in POOL_MODES:
        raise InvalidInput("pool_mode", f"must be one of {', '.join(POOL_MODES)}, "
                                        f"not {pool_mode!r}"[:200])
    if engine and pool_mode != "session":
        raise InvalidInput("pool_mode", "applies to a URL; configure an engine's connections "
                                        "yourself (docs/backends.md, \"Behind PgBouncer\")")
    return pool_mode == "transaction"


async def _schema_exists(connection: Any, schema: str | None) -> bool:
    """Whether ``schema`` (None: the connection's current schema) exists."""
    found = await connection.execute(sa.text(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = "
        "COALESCE(:schema, current_schema()))"), {"schema": schema})
    return bool(found.scalar())


def _stored(row: Any) -> StoredEvent:
    """`stored_event` for an asyncpg row, whose values already have our types (bytea is
    bytes, timestamptz an aware UTC datetime, uuid a `uuid.UUID`): no conversions; its
    first columns are the envelope's fields in order (`EVENT_READ_COLUMNS`)."""
    return StoredEvent(*row[:ENVELOPE_SIZE])


async def _fetch_with(driver: Any, sql: str, params: list[Any], settings: str) -> list[Any]:
    """``sql``'s rows with ``settings`` (a ``SET LOCAL``) for it alone. ``SET LOCAL``
    lasts the transaction, so PgBouncer's transaction pooling keeps it to this read.

    Sorting off: for a walk that must stop after its LIMIT. On tables never analyzed
    PostgreSQL estimates a tenant at a few rows, reads all of them (a bitmap scan) and
    sorts them for the LIMIT, so a page of a tenant's newest events cost its whole
    history; with sorting off only the index's own order serves it (Citus plans the
    routed statement on the worker: its equality's index scan). JIT off: a large read
    behind a transaction pooler (`NO_JIT`)."""
    async with driver.transaction():
        await driver.execute(settings)
        rows: list[Any] = await driver.fetch(sql, *params)
        return rows


async def _run_statements(
    statements: Generator[Statement, Any, list[int]], driver: Any
) -> list[int]:
    """Run a sequential append on an asyncpg connection; the positions of its events.

    Consecutive statements of one text that return nothing (a removal's view deletes,
    its blob releases) go as one ``executemany``, which asyncpg pipelines: a retention
    batch of 100 thread checkpoints was ~1,000 statements, each a round trip inside the
    transaction that holds the thread (1-2 s on the shared server), and nothing reads
    their results. Order is kept: a run is sent before any other statement."""
    result: Any = None
    run: tuple[str, list[Sequence[Any]]] | None = None
    try:
        while True:
            sql, values, returns = statements.send(result)
            result = None
            if not returns and run is not None and run[0] == sql:
                run[1].append(values)
                continue
            if run is not None:
                await _send_run(driver, *run)
                run = None
            if returns:
                result = await driver.fetchval(sql, *values)
            else:
                run = (sql, [values])
    except StopIteration as done:
        if run is not None:
            await _send_run(driver, *run)
        positions: list[int] = done.value
        return positions


async def _send_run(driver: Any, sql: str, rows: list[Sequence[Any]]) -> None:
    if len(rows) == 1:
        await driver.execute(sql, *rows[0])
    else:
        await driver.executemany(sql, rows)


async def _rolled_back(transaction: Any) -> None:
    """Roll ``transaction`` back after an error, which the caller then raises as it is.

    A connection the server ended (a restart) cannot roll back: the server already did,
    and the rollback's own error ("the underlying connection is closed") would replace
    the one that says what happened, untranslated out of `hold_stream`, where a writer
    process died of it after a restart. The pool discards the connection either way."""
    with contextlib.suppress(Exception):
        await transaction.rollback()


def _connection_lost(error: BaseException) -> bool:
    """Whether ``error`` means the connection itself is gone (not the statement's fault).

    asyncpg raises `InterfaceError` for its own refusals too (too many arguments, a
    connection in use), which would fail the same way every time: only one saying the
    connection is closed counts as lost.
    """
    driver = _driver_error(error)
    if type(driver) in _INTERFACE_ERRORS:
        return "closed" in str(driver)
    return type(driver) in _CONNECTION_LOST or isinstance(driver, OSError)


def _stand_in(column_type: sa.types.TypeEngine[Any]) -> str | None:
    """A value of ``column_type`` for a stand-in row (`PostgresBackend._key_probe`), or
    None for a type without one here."""
    if isinstance(column_type, sa.String):
        return "''"
    if isinstance(column_type, sa.Integer):
        return "0"
    if isinstance(column_type, sa.LargeBinary):
        return "''::bytea"
    if isinstance(column_type, sa.Boolean):
        return "false"
    if isinstance(column_type, sa.DateTime):
        return "now()"
    return None


def _driver_error(error: BaseException) -> BaseException:
    """The asyncpg exception inside SQLAlchemy's wrappers (or ``error`` itself)."""
    seen: BaseException = error
    if isinstance(seen, DBAPIError) and seen.orig is not None:
        seen = seen.orig
    cause = seen.__cause__
    if cause is not None and type(cause).__module__.startswith("asyncpg"):
        return cause
    return seen


NEW_AS_A_RULE = frozenset({"thread_checkpoints", "thread_channel_values", "thread_writes"})
"""The view tables whose rows an append inserts new as a rule (a checkpoint, a channel's
new version, a task's writes), so the one-statement append inserts them with no conflict
clause, and only writes the statement again with its clauses when a row was there.

Why: ``INSERT ... ON CONFLICT`` is a speculative insertion, which writes a 48-byte
``HEAP_CONFIRM`` WAL record for every row it inserts; a plain insert does not. The
conflict is still found by the unique index (never a planned lookup: issue 41's scans
under stale plans), and a failed statement writes nothing. The tables whose rows an
append finds there as a rule (a stream's head, a session's latest, the blobs a put names
again) keep their clauses."""


class _RowTaken(Exception):
    """A plain insert met a row already there (`NEW_AS_A_RULE`): write the append again
    with its conflict clauses. Nothing was written."""


def blob_shape(request: AppendRequest) -> tuple[int, int]:
    """How many blobs of ``request`` are counted and how many are not: what the single
    statement's text depends on (each group is listed in digest order)."""
    kept = sum(1 for _, count in request.blob_adds.values() if count == 0)
    return len(request.blob_adds) - kept, kept


def _coalesce(
    changes: Sequence[tuple[R, Change]], keys: dict[str, list[str]]
) -> list[tuple[R, Change]] | None:
    """Changes one statement can apply, dropping an upsert that a later upsert of the same
    row with the same columns replaces, and an insert-if-absent of a row an earlier one
    already inserts; None when rows collide in a way only sequential statements handle
    (the CTEs of one statement cannot see each other's writes)."""
    tables = {change.table for _, change in changes}
    if len(tables) == len(changes) and not any(
            isinstance(change, Delete) for _, change in changes):
        return list(changes)  # one change per table: no two can meet (a create, a put)
    slots: dict[tuple[str, tuple[Any, ...]], int] = {}
    deleted: set[str] = set()
    touched: set[str] = set()
    result: list[tuple[R, Change] | None] = []
    for index, change in changes:
        if isinstance(change, Delete):
            if change.table in touched | deleted:
                return None
            deleted.add(change.table)
            result.append((index, change))
            continue
        if change.table in deleted:
            return None
        touched.add(change.table)
        fields = change.key if isinstance(change, Update) else change.row
        slot = (change.table, tuple(fields[name] for name in keys[change.table]))
        previous = slots.get(slot)
        if previous is not None:
            earlier = result[previous]
            assert earlier is not None
            if isinstance(change, InsertIfAbsent) and isinstance(earlier[1], InsertIfAbsent):
                continue  # the earlier one inserts the row (or finds it): this one is a no-op
            same_shape = (
                isinstance(change, Upsert)
                and isinstance(earlier[1], Upsert)
                and set(change.row) == set(earlier[1].row)
            )
            if not same_shape:
                return None
            result[previous] = None
        slots[slot] = len(result)
        result.append((index, change))
    return [item for item in result if item is not None]


_GATED = EVENT_COLUMNS.index("type")
"""The event column a single statement's requirement gates (`_place_statement`)."""


def _gate_refusal(request: AppendRequest, error: BaseException) -> BaseException | None:
    """The requirement's `InvalidInput` if ``error`` is its gate closing (the first event's
    type came out NULL because the row it requires is missing), else None."""
    driver = _driver_error(error)
    if (request.required and isinstance(driver, asyncpg.NotNullViolationError)
            and getattr(driver, "table_name", None) == "events"
            and getattr(driver, "column_name", None) == EVENT_COLUMNS[_GATED]):
        return refusal(request.required[0])
    return None


def _position_of(version: str) -> str:
    """The position the events CTE assigned to the event at ``version`` (a placeholder)."""
    return f"(SELECT position FROM e WHERE stream_version = {version})"


def postgres_database(dsn: str | None, engine: Any, schema: str | None) -> Database:
    """`PostgresBackend.database` of a URL (libpq's ``host``/``port``/``dbname`` query
    parameters included) or of an engine."""
    host: str | None
    port: int | None
    name: str | None
    if dsn is not None:
        parts = urlsplit(dsn)
        query = parse_qs(parts.query)
        host = query["host"][0] if "host" in query else parts.hostname
        try:
            port = int(query["port"][0]) if "port" in query else parts.port
        except ValueError:
            port = None
        name = query["dbname"][0] if "dbname" in query else (
            unquote(parts.path.lstrip("/")) or None)
    else:
        url = engine.url
        host, port, name = url.host, url.port, url.database
    namespace = "|".join(part for part in (name, schema) if part) or None
    return Database(system="postgresql", namespace=namespace, address=host,
                    port=port if port is not None or host is None else 5432)
