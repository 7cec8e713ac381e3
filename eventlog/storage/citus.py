"""Citus (``open_log(url, distributed=True)``): the PostgreSQL log with every table
distributed by ``tenant_id`` over a cluster's workers, co-located.

The PostgreSQL backend does the work; this module owns what the cluster changes:

* **The schema.** After the Alembic scripts have run on the coordinator, every table that
  holds ``tenant_id`` (all but Alembic's stamp) is distributed by it and co-located with
  ``events``. Citus accepts a key only if it includes the distribution column, so the
  events' primary key becomes ``(tenant_id, position)``. The step is idempotent and runs
  on a log of any age: a single-node log opened with ``distributed=True`` is distributed
  (its rows copied into the shards) and keeps every event, chain and view.
* **The writer's transaction id is the worker's.** Citus evaluates a column default on
  the coordinator, so ``tx_id`` would carry the coordinator's id, unrelated to the
  worker's snapshot that `read_all`'s horizon reads. The default is dropped and a
  ``BEFORE INSERT`` trigger on the events (propagated to every shard) sets it on the
  worker that stores the row, in the transaction that writes it.
* **Appends as routed transactions.** Citus refuses the one-statement append (an
  ``INSERT`` with subqueries in data-modifying CTEs), so every append takes the
  sequential path: its statements in one transaction, each naming one tenant, so the
  coordinator routes the whole transaction to the worker holding that tenant's shards
  (that worker's ACID: all or nothing, the stream's unique version key deciding races).
* **Reads.** Everything tenant-scoped routes to one worker. `read_all` of one tenant runs
  its read horizon on the worker holding the tenant (a distributed function, delegated
  there by its tenant argument), so the gap-safety argument of one server holds there
  (docs/decisions.md, "Citus"). Across tenants there is no order one worker's
  transaction ids can give, so a whole-log `read_all` is refused, naming the per-tenant
  way.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from eventlog import cursors
from eventlog.errors import InvalidInput, SchemaError
from eventlog.records import StoredEvent
from eventlog.storage.base import AppendRequest
from eventlog.storage.postgres import READ_HORIZON, PostgresBackend, _stored
from eventlog.storage.sqltext import quote

VERSION_TABLE = "alembic_version"
"""Alembic's stamp: the one table without ``tenant_id``, kept on the coordinator."""
XID_TRIGGER = "events_worker_xid"
XID_FUNCTION = "eventlog_worker_xid"
READ_FUNCTION = "eventlog_read_tenant"


class NotDistributed(SchemaError):
    """``distributed=True`` on a server without Citus, or on a log not yet distributed
    opened with ``upgrade=False``."""


class CitusBackend(PostgresBackend):
    """The PostgreSQL backend on a Citus coordinator, every table sharded by tenant."""

    distributed = True

    def __init__(self, url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        schema = quote(self.schema or "")
        # `SELECT * FROM f(…)`: the form Citus delegates to the worker holding the tenant
        # (`SELECT (f(…)).*` and calls inside a transaction block run on the coordinator).
        self._read_tenant_sql = (f"SELECT * FROM {schema}.{quote(READ_FUNCTION)}"
                                 "($4, $1::text, $2::bigint, $3::integer)")

    # -- the schema ----------------------------------------------------------------------

    async def migrate(self, connection: Any, *, upgrade: bool) -> str:
        await _require_citus(connection)
        revision = await super().migrate(connection, upgrade=upgrade)
        schema = self.schema or "public"
        local = await _local_tables(connection, schema)
        missing_function = not await _has_read_function(connection, schema)
        if local or missing_function:
            if not upgrade:
                raise NotDistributed(
                    f"the log in schema {schema!r} is not distributed ({', '.join(local)} "
                    "still local): open it with upgrade=True (eventlog migrate "
                    "--distributed) to distribute it")
            await distribute(connection, schema, local)
        return revision

    # -- appends: routed transactions ----------------------------------------------------

    def single_statement(self, request: AppendRequest) -> tuple[str, list[Any]] | None:
        # Citus refuses data-modifying CTEs with subqueries in an INSERT; the sequential
        # statements of one tenant route to its worker as one transaction.
        return None

    async def append_batch(self, requests: Any) -> list[list[int]]:
        # One transaction per batch (the column-array statement is CTEs too); a batch of
        # several tenants is one distributed transaction over their workers.
        return await self._append_in_transaction(requests)

    # -- reads ---------------------------------------------------------------------------

    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        if tenant_id is None:
            raise InvalidInput(
                "tenant_id", "a distributed log has no gap-safe order across tenants "
                "(each worker numbers its own transactions): read one tenant at a time "
                "with read_all(tenant_id=...)")
        tx_id, position = cursors.decode_xid(after)
        rows = await self._fetch("read", self._read_tenant_sql,
                                 [str(tx_id), position, limit, tenant_id])
        events = [_stored(row) for row in rows]
        if not rows:
            return events, after
        return events, cursors.encode_xid(int(rows[-1][10]), int(rows[-1][0]))


async def _require_citus(connection: Any) -> None:
    found = (await connection.execute(sa.text(
        "SELECT extversion FROM pg_extension WHERE extname = 'citus'"))).scalar()
    if found is None:
        raise NotDistributed(
            "distributed=True needs a Citus coordinator: this server has no citus "
            "extension (CREATE EXTENSION citus, and add its workers)")


async def _local_tables(connection: Any, schema: str) -> list[str]:
    """The log's tables in ``schema`` that are not yet distributed."""
    rows = await connection.execute(sa.text(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = :schema AND c.relkind = 'r' AND c.relname <> :stamp "
        "AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid) "
        "ORDER BY c.relname <> 'events', c.relname"), {"schema": schema, "stamp": VERSION_TABLE})
    return [str(row[0]) for row in rows]


async def _has_read_function(connection: Any, schema: str) -> bool:
    found = (await connection.execute(sa.text(
        "SELECT 1 FROM pg_dist_object o JOIN pg_proc p ON o.objid = p.oid "
        "JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = :schema AND p.proname = :name"),
        {"schema": schema, "name": READ_FUNCTION})).scalar()
    return found is not None


async def distribute(connection: Any, schema: str, tables: list[str]) -> None:
    """Distribute ``tables`` of ``schema`` by ``tenant_id``, co-located with the events
    (which go first), after making every key include it; then the worker-side pieces."""
    quoted = quote(schema)
    events = f"{quoted}.{quote('events')}"

    async def run(sql: str, **params: Any) -> None:
        await connection.execute(sa.text(sql), params)

    # Triggers on distributed tables are Citus's "unsafe" feature: ours only sets a column
    # of the row being inserted, on the shard that stores it.
    await run("SET LOCAL citus.enable_unsafe_triggers TO on")
    if "events" in tables:
        primary = (await connection.execute(sa.text(
            "SELECT conname FROM pg_constraint WHERE conrelid = CAST(:table AS regclass) "
            "AND contype = 'p'"), {"table": events})).scalar()
        if primary is not None:
            await run(f"ALTER TABLE {events} DROP CONSTRAINT {quote(str(primary))}")
        await run(f"ALTER TABLE {events} ADD CONSTRAINT events_pkey "
                  "PRIMARY KEY (tenant_id, position)")
        await run(f"ALTER TABLE {events} ALTER COLUMN tx_id DROP DEFAULT")
        await run(
            f"CREATE OR REPLACE FUNCTION {quoted}.{quote(XID_FUNCTION)}() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN NEW.tx_id := pg_current_xact_id(); "
            "RETURN NEW; END $$")
    for table in tables:
        qualified = f"{quoted}.{quote(table)}"
        if table == "events":
            await run("SELECT create_distributed_table(CAST(:t AS regclass), 'tenant_id')",
                      t=qualified)
        else:
            await run("SELECT create_distributed_table(CAST(:t AS regclass), 'tenant_id', "
                      "colocate_with => :colocated)", t=qualified, colocated=events)
    if "events" in tables:
        await run(f"CREATE TRIGGER {quote(XID_TRIGGER)} BEFORE INSERT ON {events} "
                  f"FOR EACH ROW EXECUTE FUNCTION {quoted}.{quote(XID_FUNCTION)}()")
    await _create_read_function(run, quoted, events)


async def _create_read_function(run: Any, quoted: str, events: str) -> None:
    """The tenant's gap-safe page, computed on the worker that holds the tenant."""
    name = f"{quoted}.{quote(READ_FUNCTION)}"
    await run(
        f"CREATE OR REPLACE FUNCTION {name}(tenant text, after_tx text, after_position "
        'bigint, page_size integer, OUT "position" bigint, OUT event_id uuid, OUT tenant_id '
        'text, OUT stream_id text, OUT stream_version bigint, OUT recorded_at timestamptz, '
        'OUT "type" text, OUT data bytea, OUT prev_hash bytea, OUT hash bytea, '
        "OUT cursor_tx text) RETURNS SETOF record LANGUAGE plpgsql STABLE AS $$ "
        # The horizon first, into a variable: a statement on the catalogs alone, planned by
        # PostgreSQL on this worker (the rows are then read with a later snapshot of the
        # same server, which sees every transaction the horizon counts as ended).
        f"DECLARE horizon xid8 := {READ_HORIZON}; BEGIN "
        "RETURN QUERY SELECT e.position, e.event_id, e.tenant_id::text, e.stream_id::text, "
        "e.stream_version, e.recorded_at, e.type::text, e.data, e.prev_hash, e.hash, "
        "e.tx_id::text "
        f"FROM {events} AS e WHERE e.tenant_id = tenant AND e.tx_id < horizon "
        "AND (e.tx_id, e.position) > (after_tx::xid8, after_position) "
        "ORDER BY e.tx_id, e.position LIMIT page_size; END $$")
    await run(f"SELECT create_distributed_function(CAST(:f AS regprocedure), 'tenant', "
              "colocate_with => :colocated)",
              f=f"{name}(text, text, bigint, integer)", colocated=events)
