"""An encrypted log on Citus (issue 32): the subject keys are distributed with the tenant,
states are sealed, an erasure destroys the key on the tenant's worker, verify holds; no
marker is in any table on the coordinator or a worker, a ciphertext moved to another
tenant is refused, and an export carries the wrapped keys to another schema."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import asyncpg
import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.crypto import init_keyring
from eventlog.errors import KeyringRequired, SealRefused, SubjectErased
from eventlog.testing.interrupts import OPTIONS, FakeClock
from eventlog.transfer import export_log, import_log
from tests.citus import cluster
from tests.test_encryption import populate

pytestmark = pytest.mark.citus


async def test_an_encrypted_tenant_reads_erases_and_verifies(
        citus_schema: str, tmp_path: Path) -> None:
    """Create and read under a keyring, erase, the read refused, the records listed,
    verify whole; no marker in the events' or blobs' bytes."""
    keyring = init_keyring(tmp_path / "keyring.json")
    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        keyring=keyring) as log:
        created = await log.checkpoints.create(CheckpointRecord(
            tenant_id="acme", session_id="s1", run_id=uuid.uuid4(),
            state={"secret": "MARKER-CITUS"}, metadata={"m": "MARKER-CITUS"}))
        read = await log.checkpoints.read("acme", "s1", created.checkpoint_id or "")
        blobs = await log.storage.get_blobs("acme", list(await log.blob_refs("acme")))
        events = (await log.read_all()).events
        await log.erase("acme", "s1", reason="test")
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("acme", "s1", created.checkpoint_id or "")
        assert ({"secret": "MARKER-CITUS"}, False, 1, True) == (
            read, any(b"MARKER" in data for data in [*blobs.values(),
                                                      *(e.data for e in events)]),
            len(await log.checkpoints.list("acme", "s1")), (await log.verify()).ok)


WORKERS = (cluster.PORT + 1, cluster.PORT + 2)
MARKERS = ("MARKER-STATE", "MARKER-META", "MARKER-CHANNEL", "MARKER-TMETA", "MARKER-WRITE",
           "MARKER-MESSAGE", "MARKER-IMETA", "MARKER-RESUME", "MARKER-SNAPSHOT",
           "MARKER-NOTE", "MARKER-EVIDENCE")


async def _text(port: int, schema: str) -> tuple[int, str]:
    """How many tables (shards, on a worker) the schema holds on the node at ``port``,
    and all their rows as text."""
    connection = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres")
    try:
        tables = [row["relname"] for row in await connection.fetch(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')", schema)]
        rows = [str(row[0]) for table in tables for row in await connection.fetch(
            f'SELECT t::text FROM "{schema}"."{table}" t')]
        return len(tables), "".join(rows)
    finally:
        await connection.close()


async def test_no_marker_is_in_any_table_on_the_coordinator_or_a_worker(
        citus_schema: str, tmp_path: Path) -> None:
    """Every place the issue names holds a marker (the same population as the PostgreSQL
    test); no table's text on the coordinator, nor any shard's on each worker, holds one
    (nor its hex, as bytea renders)."""
    keyring = init_keyring(tmp_path / "keyring.json")
    clock = FakeClock()
    async with open_log(cluster.URL, schema=citus_schema, distributed=True, keyring=keyring,
                        clock=clock, interrupt_options=OPTIONS) as log:
        await populate(log, clock)
        assert (await log.verify()).ok
    found = {}
    for port in (cluster.PORT, *WORKERS):
        tables, text = await _text(port, citus_schema)
        found[port] = (tables > 0, [m for m in MARKERS if m in text or
                                    m.encode().hex() in text])
    assert {port: (True, []) for port in (cluster.PORT, *WORKERS)} == found


async def test_a_blob_moved_to_another_tenant_is_refused(citus_schema: str,
                                                         tmp_path: Path) -> None:
    """Tenant t's sealed state copied into tenant u (another shard) under its address,
    with u's checkpoint pointing at it: it does not open in u (the tenant is bound)."""
    keyring = init_keyring(tmp_path / "keyring.json")
    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        keyring=keyring) as log:
        await log.checkpoints.create(_record("t"))
        theirs = await log.checkpoints.create(_record("u", state={"other": True}))
        connection = await asyncpg.connect(cluster.BASE_URL)
        try:
            digest, data = (await connection.fetch(
                f'SELECT digest, data FROM "{citus_schema}".blobs WHERE tenant_id = $1',
                "t"))[0]
            await connection.execute(f'UPDATE "{citus_schema}".blobs SET data = $1, '
                                     "digest = $2 WHERE tenant_id = 'u'", data, digest)
            await connection.execute(f'UPDATE "{citus_schema}".checkpoints SET state_digest '
                                     "= $1 WHERE tenant_id = 'u'", digest)
        finally:
            await connection.close()
        with pytest.raises(SealRefused, match="does not open in tenant 'u'"):
            await log.checkpoints.read("u", "s1", theirs.checkpoint_id or "")


async def test_an_encrypted_tenant_exported_and_imported_between_schemas(
        citus_schema: str, tmp_path: Path) -> None:
    """Exported from one Citus schema with its wrapped keys and erasure, imported into
    another: reads with the keyring, refuses without, the erased subject stays erased."""
    keyring = init_keyring(tmp_path / "keyring.json")
    sink = io.BytesIO()
    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        keyring=keyring) as log:
        kept = await log.checkpoints.create(_record("t"))
        gone = await log.checkpoints.create(_record("t", session="gone"))
        await log.erase("t", "gone", reason="asked")
        await export_log(log, sink, tenant_id="t")
    target = cluster.fresh_schema()
    try:
        sink.seek(0)
        async with open_log(cluster.URL, schema=target, distributed=True) as copy:
            await import_log(copy, sink)
            with pytest.raises(KeyringRequired):
                await copy.checkpoints.read("t", "s1", kept.checkpoint_id or "")
            blind = (await copy.verify()).ok
        async with open_log(cluster.URL, schema=target, distributed=True,
                            keyring=keyring) as copy:
            read = await copy.checkpoints.read("t", "s1", kept.checkpoint_id or "")
            with pytest.raises(SubjectErased):
                await copy.checkpoints.read("t", "gone", gone.checkpoint_id or "")
            assert (True, {"secret": "MARKER-STATE"}, b"MARKER" in sink.getvalue()) == (
                blind, read, False)
    finally:
        await cluster.drop_schema(target)


def _record(tenant: str, session: str = "s1", **fields: object) -> CheckpointRecord:
    return CheckpointRecord(tenant_id=tenant, session_id=session, run_id=uuid.uuid4(),
                            **{"state": {"secret": "MARKER-STATE"},  # type: ignore[arg-type]
                               "metadata": {"who": "MARKER-META"}, **fields})


async def test_the_record_of_the_keyring_guards_writes_on_the_cluster(
        citus_schema: str, tmp_path: Path) -> None:
    """The keyrings record (on the coordinator) refuses a keyless and a wrong-keyring
    write to an encrypted distributed log, naming its KEK, nothing written (issue 40 §4)."""
    from eventlog.errors import WriteNeedsKeyring, WrongKeyring

    keyring = init_keyring(tmp_path / "keyring.json")
    other = init_keyring(tmp_path / "other.json")

    def record(session: str) -> CheckpointRecord:
        return CheckpointRecord(tenant_id="acme", session_id=session, run_id=uuid.uuid4(),
                                state={"secret": "MARKER-CITUS"})

    async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                        keyring=keyring) as log:
        await log.checkpoints.create(record("s1"))
    for ring, refusal in ((None, WriteNeedsKeyring), (other, WrongKeyring)):
        options = {} if ring is None else {"keyring": ring}
        async with open_log(cluster.URL, schema=citus_schema, distributed=True,
                            **options) as log:
            with pytest.raises(refusal, match=keyring.key_id):
                await log.checkpoints.create(record("s2"))
            assert await log.wait_readable()
            assert 1 == len((await log.read_all()).events)
