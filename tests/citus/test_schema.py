"""The distributed schema: every table sharded by tenant and co-located, the events keyed
with the tenant, a single-node log turned into a distributed one, and the refusals."""

from __future__ import annotations

import asyncpg
import pytest
from structlog.testing import capture_logs

from eventlog import StreamAppend, open_log
from eventlog.checkpoints import Payload
from eventlog.errors import InvalidInput, SchemaError
from eventlog.storage.schema import KEY_TABLE, TREE_TABLES
from projections import compare_views
from tests import head_schema
from tests.citus import cluster
from tests.events import Noted
from tests.procs.settle import settle
from tests.test_holdings_folded import _pg_migrate as pg_migrate
from tests.test_no_checkpoint_id_index import pg_index
from tests.test_thread_read_plans import T
from tests.test_thread_read_plans import _fill as fill_thread
from tests.test_values_the_digest_tells import (
    TINY,
    check_downgraded,
    check_head,
    filled_with_tiny_values,
    held_references,
    pg_refs,
)
from tests.test_values_the_digest_tells import reads as tiny_reads

pytestmark = [pytest.mark.citus, pytest.mark.usefixtures("full_puts")]


async def _placement(schema: str) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """Each table's (distribution column, co-location group), and the events' key."""
    connection = await asyncpg.connect(cluster.BASE_URL)
    try:
        rows = await connection.fetch(
            "SELECT c.relname, column_to_column_name(p.logicalrelid, p.partkey), "
            "p.colocationid FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", schema)
        key = await _primary_key(connection, f'"{schema}".events')
    finally:
        await connection.close()
    return {str(r[0]): (str(r[1]), int(r[2])) for r in rows}, key


async def _primary_key(connection: asyncpg.Connection, table: str) -> list[str]:
    """The columns of ``table``'s primary key, in its order."""
    return [str(row[0]) for row in await connection.fetch(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = $1::regclass AND i.indisprimary "
        "ORDER BY array_position(i.indkey, a.attnum)", table)]


async def test_every_table_is_distributed_by_tenant_and_colocated(citus_schema: str) -> None:
    """All seventeen tables (the transparency tree's three and the subject keys too), one
    co-location group, the events keyed (tenant, position)."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        tables = {"events", "blobs", KEY_TABLE, *TREE_TABLES, *log.storage.views}  # type: ignore[attr-defined]
    placement, key = await _placement(citus_schema)
    assert tables == set(placement)
    assert {"tenant_id"} == {column for column, _ in placement.values()}
    assert 1 == len({group for _, group in placement.values()})
    assert ["tenant_id", "position"] == key


async def test_a_single_node_log_becomes_distributed_and_keeps_everything(
    citus_schema: str,
) -> None:
    """A log written on the coordinator as a plain PostgreSQL log, then opened with
    distributed=True: every event, chain and view is there, and appends go on."""
    async with open_log(cluster.URL, schema=citus_schema) as log:
        for tenant in ("t1", "t2", "t3"):
            await log.append(tenant, "s", [Noted(text="a"), Noted(text="b")])
        await log.checkpoints.create(_record())
        await settle(log)
        before = {tenant: (await log.read_all(tenant_id=tenant)).events
                  for tenant in ("t1", "t2", "t3", "t")}
    assert {} == (await _placement(citus_schema))[0]
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        await settle(log)
        after = {tenant: (await log.read_all(tenant_id=tenant)).events for tenant in before}
        await log.append("t1", "s", [Noted(text="c")], expected_version=2)
        report = await log.verify()
        drift = await compare_views(log)
        latest = await log.checkpoints.latest("t", "s")
        tables = {"events", "blobs", KEY_TABLE, *TREE_TABLES, *log.storage.views}  # type: ignore[attr-defined]
    assert [e.event_id for es in before.values() for e in es] == [
        e.event_id for es in after.values() for e in es]
    assert (True, [], "c1") == (report.ok, drift, latest.checkpoint_id if latest else None)
    assert tables == set((await _placement(citus_schema))[0])


async def test_opening_without_upgrade_refuses_a_log_not_yet_distributed(
    citus_schema: str,
) -> None:
    """upgrade=False never distributes: it names what is still local and the way out."""
    async with open_log(cluster.URL, schema=citus_schema):
        pass
    with pytest.raises(SchemaError, match=r"not distributed.*upgrade=True"):
        async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                            upgrade=False):
            pass


async def test_a_batch_of_two_tenants_is_refused_and_writes_nothing(citus_schema: str) -> None:
    """One transaction over two workers would commit after its ids were given out."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        with pytest.raises(InvalidInput, match="one tenant, not 2"):
            await log.append_batch([
                StreamAppend(tenant_id="a", stream_id="s", events=[Noted(text="x")]),
                StreamAppend(tenant_id="b", stream_id="s", events=[Noted(text="y")]),
            ])
        same = await log.append_batch([
            StreamAppend(tenant_id="a", stream_id="s1", events=[Noted(text="x")]),
            StreamAppend(tenant_id="a", stream_id="s2", events=[Noted(text="y")]),
        ])
        assert ([], 2) == ((await log.read_all(tenant_id="b")).events, len(same))


def _record() -> object:
    from eventlog.testing.contract.checkpoints import record

    return record(checkpoint_id="c1", state={"v": 1})


async def test_blob_shards_keep_payloads_out_of_line(citus_schema: str) -> None:
    """The blobs' storage option (``toast_tuple_target = 128``, migration 0018: a
    reference-count update copies a small row, not the payload) is on every shard of the
    distributed blobs, on the workers."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True):
        pass
    connection = await asyncpg.connect(cluster.BASE_URL)
    try:
        options = await connection.fetch(
            "SELECT result FROM run_command_on_shards($1::regclass, "
            "$$SELECT reloptions::text FROM pg_class WHERE oid = '%s'::regclass$$)",
            f'"{citus_schema}".blobs')
    finally:
        await connection.close()
    assert options
    assert {"{toast_tuple_target=128}"} == {row[0] for row in options}


async def test_opening_a_distributed_log_asks_the_server_to_describe_no_type(
    citus_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither distributing a log nor opening it again binds a parameter whose type
    asyncpg must look up: its lookup is a catalog query that took 6-7 s on a busy
    coordinator, every time a log was opened."""
    described: list[list[int]] = []
    lookup = asyncpg.Connection._introspect_types  # type: ignore[attr-defined]

    async def counted(self: asyncpg.Connection, types: list[int], *args: object) -> object:
        described.append(list(types))
        return await lookup(self, types, *args)

    monkeypatch.setattr(asyncpg.Connection, "_introspect_types", counted)
    for _ in range(2):  # the first open distributes, the second finds it distributed
        async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
            await log.append("t", "s", [Noted(text="x")])
    assert [] == described


async def _issue_41_shape(schema: str) -> tuple[str, list[str]]:
    """The thread index's definition and the values' key columns, on the coordinator."""
    connection = await asyncpg.connect(cluster.BASE_URL)
    try:
        index = await connection.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 "
            "AND indexname = 'thread_checkpoints_by_thread'", schema)
        key = await _primary_key(connection, f'"{schema}".thread_channel_values')
    finally:
        await connection.close()
    return str(index), key


async def test_a_distributed_log_takes_migrations_0027_and_0028_in_place(
    citus_schema: str,
) -> None:
    """The thread index made partial (0027) and the values re-keyed (0028) on distributed
    tables: a distributed log taken down to 0026 and opened again reads every page and
    checkpoint of a thread with a subgraph as before, each migration applied both ways."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        await fill_thread(log, "x", [f"{n:04}" for n in range(0, 40, 2)])
        await fill_thread(log, "x", [f"{n:04}" for n in range(1, 40, 4)], namespace="child:a")
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        page = [(c.checkpoint_id, c.namespace) for c in await threads.page(T, "x", limit=7)]
        latest = await threads.get(T, "x")
    index, key = await _issue_41_shape(citus_schema)
    assert index.endswith("WHERE (length(namespace) > 0)")
    assert ["tenant_id", "thread_id", "namespace", "channel_version", "channel"] == key

    await pg_migrate(citus_schema, "0026_positions_without_sequence", cluster.BASE_URL)
    index, key = await _issue_41_shape(citus_schema)
    assert "WHERE" not in index
    assert ["tenant_id", "thread_id", "namespace", "channel", "channel_version"] == key

    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        assert page == [(c.checkpoint_id, c.namespace)
                        for c in await threads.page(T, "x", limit=7)]
        assert latest == await threads.get(T, "x")
        assert (await log.verify()).ok
    index, key = await _issue_41_shape(citus_schema)
    assert index.endswith("WHERE (length(namespace) > 0)")
    assert ["tenant_id", "thread_id", "namespace", "channel_version", "channel"] == key


async def test_a_distributed_log_takes_migration_0029_in_place(citus_schema: str) -> None:
    """The index by checkpoint id dropped (0029) on a distributed table and built again by
    the downgrade; a run's checkpoints and a search by id read the same either way."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        await fill_thread(log, "lg", [f"1{n:03}" for n in range(12)])
        await fill_thread(log, "wf", [f"2{n:03}" for n in range(6)], run_key=None)
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        found = ([c.checkpoint_id for c in await threads.of_run(T, "2003")],
                 [c.checkpoint_id for c in await threads.of_run(T, "run")],
                 [c.thread_id for c in await threads.find(T, "1004")])
    assert (["2003"], [f"1{n:03}" for n in range(12)], ["lg"]) == found
    assert await pg_index(citus_schema, cluster.BASE_URL) is None

    await pg_migrate(citus_schema, "0028_values_by_version", cluster.BASE_URL)
    definition = await pg_index(citus_schema, cluster.BASE_URL)
    assert definition is not None
    assert definition.endswith("(checkpoint_id, tenant_id)")
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        assert found == ([c.checkpoint_id for c in await threads.of_run(T, "2003")],
                         [c.checkpoint_id for c in await threads.of_run(T, "run")],
                         [c.thread_id for c in await threads.find(T, "1004")])
    assert await pg_index(citus_schema, cluster.BASE_URL) is None


async def test_a_distributed_log_takes_migration_0030_in_place(citus_schema: str) -> None:
    """Tiny blobs' counts zeroed (0030) on the distributed blobs table, given back from the
    events by the downgrade and zeroed again; the thread reads the same and verifies."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        await filled_with_tiny_values(log)
        held, found = await held_references(log), await tiny_reads(log)
    check_head(await pg_refs(citus_schema, cluster.BASE_URL))

    await pg_migrate(citus_schema, "0029_no_checkpoint_id_index", cluster.BASE_URL)
    check_downgraded(await pg_refs(citus_schema, cluster.BASE_URL), held)
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        assert found == await tiny_reads(log)
        assert (await log.verify()).ok
    refs = await pg_refs(citus_schema, cluster.BASE_URL)
    assert {count for digest, count in refs.items() if digest in TINY} == {0}


async def test_a_distributed_log_takes_migration_0031_in_place(citus_schema: str) -> None:
    """The run index made partial (0031) on a distributed table, whole again by the
    downgrade and partial once more; a run's checkpoints read the same throughout."""
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        await fill_thread(log, "lg", [f"1{n:03}" for n in range(8)])
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        for n in range(5):
            await threads.put(T, "plain", f"3{n:03}", state=Payload("json", b'{"s": 1}'))
        found = [c.checkpoint_id for c in await threads.of_run(T, "run")]
    assert [f"1{n:03}" for n in range(8)] == found
    definition = await run_index(citus_schema)
    assert definition.endswith("WHERE (run_key IS NOT NULL)")

    await pg_migrate(citus_schema, "0030_values_the_digest_tells", cluster.BASE_URL)
    assert (await run_index(citus_schema)).endswith("(run_key, tenant_id)")
    async with open_log(cluster.URL, schema=citus_schema, distributed=True) as log:
        threads = log.checkpoints.threads  # type: ignore[attr-defined]
        assert found == [c.checkpoint_id for c in await threads.of_run(T, "run")]
        assert 8 == await threads.delete_runs(T, ["run"])
    assert (await run_index(citus_schema)).endswith("WHERE (run_key IS NOT NULL)")


async def run_index(schema: str) -> str:
    """The run index's definition in ``schema`` on the coordinator."""
    return str(await pg_index(schema, cluster.BASE_URL, "thread_checkpoints_by_run"))


async def test_a_new_distributed_schema_from_the_script_is_the_migrated_one(
    citus_schema: str,
) -> None:
    """An empty schema opened with distributed=True is made by the shipped head script
    (one round trip through the coordinator), then distributed: pg_dump on the
    coordinator of it equals that of a schema every migration made, distributed after
    (eventlog/storage/headschema.py)."""
    migrated = cluster.fresh_schema()
    try:
        await head_schema.migrated_postgres(cluster.BASE_URL, migrated)
        async with open_log(cluster.URL, schema=migrated, distributed=True):
            pass
        with capture_logs() as entries:
            async with open_log(cluster.URL, schema=citus_schema, distributed=True):
                pass
        assert ["schema_created"] == [entry["event"] for entry in entries
                                      if entry["event"].startswith("schema_")]
        assert head_schema.pg_dump(cluster.BASE_URL, migrated) == head_schema.pg_dump(
            cluster.BASE_URL, citus_schema)
        assert set((await _placement(migrated))[0]) == set(
            (await _placement(citus_schema))[0])
    finally:
        await cluster.drop_schema(migrated)
