"""Citus (``open_log(url, distributed=True)``): the PostgreSQL log with every table
distributed by ``tenant_id`` over a cluster's workers, co-located.

The PostgreSQL backend does the work, connected to the coordinator; this module owns what
the cluster changes (the ordering argument is in docs/decisions/storage.md, "Citus"):

* **The schema.** After the Alembic scripts have run on the coordinator, every table that
  holds ``tenant_id`` (all but Alembic's stamp) is distributed by it and co-located with
  ``events``. Citus accepts a key only if it includes the distribution column, so the
  events' primary key becomes ``(tenant_id, position)``. The step is idempotent and runs
  on a log of any age: a single-node log opened with ``distributed=True`` is distributed
  (its rows copied into the shards) and keeps every event, chain and view.
* **Appends as routed transactions, one tenant each.** Citus refuses the one-statement
  append (an ``INSERT`` with subqueries in data-modifying CTEs), so every append takes
  the sequential path: its statements in one transaction on the coordinator, each naming
  one tenant, all routed over one connection to the worker holding that tenant's shards
  (that worker's ACID: all or nothing, the stream's unique version key deciding races).
  The coordinator evaluates the column defaults, so a row's ``position`` comes from the
  coordinator's sequence and its ``tx_id`` is the coordinator's transaction id; Citus
  commits a one-worker transaction on the worker *before* the coordinator's own commit
  ends that id. A transaction writing on two workers would commit there in two phases,
  the second *after* the coordinator's id ended: a batch naming more than one tenant is
  refused.
* **Reads.** Tenant-scoped reads name the tenant and route to one worker. `read_all`'s
  read horizon is computed on the coordinator (Citus plans it there, before the query on
  the workers), over the coordinator's transaction ids, which every row carries: the
  one-server argument holds unchanged, across tenants, and across shard moves (a row
  keeps its id wherever its shard goes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from eventlog.errors import CommitOutcomeUnknown, InvalidInput, SchemaError
from eventlog.storage.base import AppendRequest, StreamVersionTaken
from eventlog.storage.pgconsumers import Listener
from eventlog.storage.postgres import PostgresBackend, _driver_error
from eventlog.storage.schema import CONSUMER_TABLE, KEYRING_TABLE
from eventlog.storage.sqltext import PostgresDialect, quote

VERSION_TABLE = "alembic_version"
"""Alembic's stamp: a table without ``tenant_id``, kept on the coordinator."""
LOCAL_TABLES = (VERSION_TABLE, CONSUMER_TABLE, KEYRING_TABLE)
"""The tables kept on the coordinator, undistributed: Alembic's stamp, the durable
consumers' rows (a consumer may read the whole log, so its row is no tenant's; a claim and
an ack are one-row statements on the coordinator), and the keyrings an encrypted log is
wrapped under (the whole log's, read once by a process's first write)."""


_SHARD_CONSTRAINT = re.compile(r'constraint "(events_\w+?_key)(?:_\d+)?"')


class NotDistributed(SchemaError):
    """``distributed=True`` on a server without Citus, or on a log not yet distributed
    opened with ``upgrade=False``."""


class CitusDialect(PostgresDialect):
    """PostgreSQL's text, but a `Lookup` joins its key set plainly: Citus cannot push a
    ``LATERAL`` subquery with ``OFFSET`` over a table function down to a worker ("Offset
    clause is currently unsupported when a lateral subquery references a column from a
    table function"). The plain join is routed whole to the tenant's worker, whose planner
    seeks each key by the index. A query's `Related` rows are read by such lookups after
    it (`projections.query.read_related`), not in its statement (`related_sql` seeks
    them in ``LATERAL`` subqueries with ``OFFSET 0`` over ``jsonb_each_text``)."""

    lateral = False
    nests = False
    kept_equal = frozenset({"tenant_id"})


class CitusBackend(PostgresBackend):
    """The PostgreSQL backend on a Citus coordinator, every table sharded by tenant."""

    # A distributed insert reading a coordinator's temporary table is planned as a
    # pull to the coordinator, not the one-shard router query an append must be: big
    # values are bound, as before.
    streams_values = False

    sql_dialect = CitusDialect()

    def _blobs_sql(self, what: str) -> str:
        # `= ANY`, routed whole to the tenant's worker: Citus cannot push the LATERAL
        # subquery with OFFSET over unnest that PostgreSQL's probes use (`CitusDialect`).
        return (f"SELECT digest, {what} FROM {self.qualified['blobs']} "
                "WHERE tenant_id = $1 AND digest = ANY($2)")

    # -- the schema ----------------------------------------------------------------------

    async def migrate(self, connection: Any, *, upgrade: bool) -> str:
        await _require_citus(connection)
        revision = await super().migrate(connection, upgrade=upgrade)
        schema = self.schema or "public"
        local = await _local_tables(connection, schema)
        if local:
            if not upgrade:
                raise NotDistributed(
                    f"the log in schema {schema!r} is not distributed ({', '.join(local)} "
                    "still local): open it with upgrade=True (eventlog migrate "
                    "--distributed) to distribute it")
            await distribute(connection, schema, local)
        return revision

    def listener(self, wake: Callable[[], None]) -> Listener | None:
        # The wake-up trigger is gone from the distributed events (`distribute`).
        return None

    # -- appends: routed transactions, one tenant each -----------------------------------

    def single_statement(self, request: AppendRequest, *, plain: bool = False
                         ) -> tuple[str, list[Any]] | None:
        # Citus refuses data-modifying CTEs with subqueries in an INSERT; the sequential
        # statements of one tenant route to its worker as one transaction.
        return None

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        tenants = sorted({request.tenant_id for request in requests})
        if len(tenants) > 1:
            raise InvalidInput(
                "appends", f"a batch on a distributed log names one tenant, not "
                f"{len(tenants)} ({', '.join(map(repr, tenants[:3]))}): a transaction over "
                "two workers commits after its order is given out; append each tenant's "
                "streams in a batch of its own")
        return await self._append_in_transaction(requests)

    async def stream_heads(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        # Citus cannot push down the one-statement form (a LIMIT in a lateral subquery
        # over unnest): each stream's head is its own routed read.
        heads: dict[tuple[str, str], tuple[int, bytes]] = {}
        for key in dict.fromkeys(keys):
            head = await self.stream_head(*key)
            if head is not None:
                heads[key] = head
        return heads

    # -- errors --------------------------------------------------------------------------

    def translate(self, error: BaseException, operation: str) -> BaseException:
        # A worker's error reaches us through the coordinator naming the shard's
        # constraint (events_stream_version_key_102008), in its message only: the races
        # and lost commits are recognised by the table's name for it.
        driver = _driver_error(error)
        if type(driver).__name__ == "UniqueViolationError":
            named = _SHARD_CONSTRAINT.search(str(driver))
            if named is not None and named[1] == "events_stream_version_key":
                return StreamVersionTaken()
            if named is not None and named[1] == "events_event_id_key":
                return CommitOutcomeUnknown("postgresql", operation,
                                            "event ids already stored")
        return super().translate(error, operation)


async def _require_citus(connection: Any) -> None:
    found = (await connection.execute(sa.text(
        "SELECT extversion FROM pg_extension WHERE extname = 'citus'"))).scalar()
    if found is None:
        raise NotDistributed(
            "distributed=True needs a Citus coordinator: this server has no citus "
            "extension (CREATE EXTENSION citus, and add its workers)")


async def _local_tables(connection: Any, schema: str) -> list[str]:
    """The log's tables in ``schema`` that are not yet distributed, ``events`` first."""
    # Compared as text[], not name[]: asyncpg has no built-in codec for name[] and asks the
    # server for its description, a catalog query that took 6-7 s on a Citus coordinator
    # (1 s with JIT on a plain server), on every open of a distributed log.
    rows = await connection.execute(sa.text(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = :schema AND c.relkind = 'r' "
        "AND c.relname::text <> ALL(CAST(:kept AS text[])) "
        "AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid) "
        "ORDER BY c.relname <> 'events', c.relname"),
        {"schema": schema, "kept": list(LOCAL_TABLES)})
    return [str(row[0]) for row in rows]


async def distribute(connection: Any, schema: str, tables: list[str]) -> None:
    """Distribute ``tables`` of ``schema`` by ``tenant_id``, co-located with the events
    (which go first), after making the events' primary key include it."""
    quoted = quote(schema)
    events = f"{quoted}.{quote('events')}"

    async def run(sql: str, **params: Any) -> None:
        await connection.execute(sa.text(sql), params)

    if "events" in tables:
        # Citus distributes no table with a trigger: the events lose the wake-up trigger
        # of migration 0014 (it would fire on the workers, which no subscriber listens
        # to); subscribers of a distributed log poll.
        await run(f"DROP TRIGGER IF EXISTS events_notify ON {events}")
        primary = (await connection.execute(sa.text(
            "SELECT conname FROM pg_constraint WHERE conrelid = CAST(:table AS regclass) "
            "AND contype = 'p'"), {"table": events})).scalar()
        if primary is not None:
            await run(f"ALTER TABLE {events} DROP CONSTRAINT {quote(str(primary))}")
        await run(f"ALTER TABLE {events} ADD CONSTRAINT events_pkey "
                  "PRIMARY KEY (tenant_id, position)")
    for table in tables:
        qualified = f"{quoted}.{quote(table)}"
        holds_rows = (await connection.execute(sa.text(
            f"SELECT EXISTS (SELECT 1 FROM {qualified})"))).scalar()
        if table == "events":
            await run("SELECT create_distributed_table(CAST(:t AS regclass), 'tenant_id')",
                      t=qualified)
        else:
            await run("SELECT create_distributed_table(CAST(:t AS regclass), 'tenant_id', "
                      "colocate_with => :colocated)", t=qualified, colocated=events)
        if holds_rows:
            # A single-node log's rows were copied into the shards; the coordinator's own
            # copy (no longer read) goes.
            await run("SELECT truncate_local_data_after_distributing_table("
                      "CAST(:t AS regclass))", t=qualified)
