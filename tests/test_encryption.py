"""Encryption under per-subject keys (issue 32), on real storage: nothing personal is
stored in the clear, ciphertext moved or replaced by plaintext is refused, erasure
destroys a key and keeps the chain, and a log read without its keyring verifies."""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord, CorruptBlob, OpenLog, open_log
from eventlog.checkpoints import Payload
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.errors import (
    InvalidInput,
    KeyringRequired,
    KeyUnavailable,
    SealRefused,
    SubjectErased,
)
from eventlog.interrupts import Finish, Reconciliation, Resume, ResumeInput
from eventlog.interrupts.models import Interrupt
from eventlog.testing.interrupts import APPROVAL, OPTIONS, PAY, FakeClock
from tests.conftest import PG_URL, drop_schema, require_postgres

MARKERS = ("MARKER-STATE", "MARKER-META", "MARKER-CHANNEL", "MARKER-WRITE", "MARKER-TMETA",
           "MARKER-MESSAGE", "MARKER-IMETA", "MARKER-RESUME", "MARKER-SNAPSHOT",
           "MARKER-NOTE", "MARKER-EVIDENCE")


def _record(session: str = "s1", tenant: str = "t", **fields: Any) -> CheckpointRecord:
    return CheckpointRecord(tenant_id=tenant, session_id=session, run_id=uuid.uuid4(),
                            **{"state": {"secret": "MARKER-STATE"},
                               "metadata": {"who": "MARKER-META"}, **fields})


async def populate(log: OpenLog, clock: FakeClock) -> None:
    """A marker in every place the issue names: states, metadata, channel values, pending
    writes, interrupt messages and metadata, resume answers, snapshots, notes, evidence."""
    await log.checkpoints.create(_record())
    threads = log.checkpoints.threads
    await threads.put("t", "th1", "c1", state=Payload("json", b'"MARKER-STATE"'),
                      channels={"ch": Payload("json", b'"MARKER-CHANNEL"')},
                      metadata={"m": "MARKER-TMETA"})
    await threads.put_writes("t", "th1", "c1", "task", [(0, "ch", Payload("json",
                                                                        b'"MARKER-WRITE"'))])
    asked = [Interrupt(id="a", reason="confirmation", message="MARKER-MESSAGE",
                       response_schema=APPROVAL, metadata={"x": "MARKER-IMETA"})]
    for thread in ("th1", "th2"):
        batch = await log.interrupts.create("t", thread, asked, "c1", operation=PAY)
        claim = (await log.interrupts.try_claim("t", ResumeInput(
            thread_id=thread, batch_id=batch.batch_id, responses=[Resume(
                interrupt_id="a", status="resolved",
                payload={"approved": True, "note": "MARKER-RESUME"})]))).claim
        assert claim is not None
        handle = await log.interrupts.start_capture(claim)
        assert handle is not None
        await log.interrupts.try_start_effect(claim)
        await log.interrupts.complete_capture(handle, "completed", "MARKER-SNAPSHOT")
        if thread == "th1":
            await log.interrupts.finish(claim, Finish.FINALIZE)
    clock.advance(hours=2)
    await log.interrupts.cleanup()
    open_batch = (await log.interrupts.recover("t", "th2")).batch
    assert open_batch is not None
    result = await log.interrupts.reconcile(["t"], open_batch.batch_id, "ops", Reconciliation(
        resolution="effect_applied", evidence={"ref": "MARKER-EVIDENCE"}, note="MARKER-NOTE"))
    assert result.recorded


@pytest.fixture
def keyring(tmp_path: Path) -> FileKeyring:
    return init_keyring(tmp_path / "keyring.json")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'log.db'}"


@pytest.fixture
async def sealed(db: str, keyring: FileKeyring) -> AsyncIterator[OpenLog]:
    async with open_log(db, keyring=keyring) as log:
        yield log


def _stored_bytes(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in tmp_path.glob("log.db*"))


async def test_no_marker_is_stored_in_the_sqlite_file_or_its_wal(
        db: str, keyring: FileKeyring, tmp_path: Path) -> None:
    """Every marker written through the stores is absent from the database file and WAL,
    and each reads back through the keyring."""
    clock = FakeClock()
    async with open_log(db, keyring=keyring, clock=clock, interrupt_options=OPTIONS) as log:
        await populate(log, clock)
        stored = _stored_bytes(tmp_path)
        latest = await log.checkpoints.latest("t", "s1")
        assert latest is not None
        read = await log.checkpoints.read("t", "s1", latest.checkpoint_id)
        found = await log.checkpoints.threads.get("t", "th1", "c1")
        assert found is not None
        assert ([], {"secret": "MARKER-STATE"}, {"who": "MARKER-META"},
                b'"MARKER-CHANNEL"', {"m": "MARKER-TMETA"}) == (
            [marker for marker in MARKERS if marker.encode() in stored], read,
            latest.metadata, found.channels["ch"].data, found.metadata)
        assert (await log.verify()).ok


@pytest.mark.postgres
async def test_no_marker_is_in_any_postgresql_table(keyring: FileKeyring) -> None:
    """Every table of the log's schema, read as text, holds none of the markers."""
    require_postgres()
    schema = f"crypt_{uuid.uuid4().hex[:10]}"
    clock = FakeClock()
    try:
        async with open_log(PG_URL, schema=schema, keyring=keyring, clock=clock,
                            interrupt_options=OPTIONS) as log:
            await populate(log, clock)
            tables = [row["table_name"] for row in await _pg(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                schema)]
            text = "".join([str(row[0]) for table in tables for row in await _pg(
                f'SELECT t::text FROM "{schema}"."{table}" t')])
            assert (True, []) == (len(tables) > 10, [m for m in MARKERS if m in text])
            # bytea renders as hex in text: look there too
            assert [] == [m for m in MARKERS if m.encode().hex() in text]
    finally:
        await drop_schema(schema)


async def _pg(sql: str, *args: Any) -> list[Any]:
    import asyncpg

    connection = await asyncpg.connect(PG_URL)
    try:
        return list(await connection.fetch(sql, *args))
    finally:
        await connection.close()


async def test_without_the_keyring_verify_lists_and_logs_work_but_reads_refuse(
        db: str, keyring: FileKeyring) -> None:
    """Opened without its keyring, an encrypted log verifies, lists its records and
    events, and refuses to read a state (`KeyringRequired`)."""
    async with open_log(db, keyring=keyring) as log:
        created = await log.checkpoints.create(_record())
    async with open_log(db) as log:
        listed = await log.checkpoints.list("t", "s1")
        events = (await log.read_all()).events
        with pytest.raises(KeyringRequired):
            await log.checkpoints.read("t", "s1", created.checkpoint_id or "")
        assert ((await log.verify()).ok, [created.checkpoint_id], 1) == (
            True, [record.checkpoint_id for record in listed], len(events))


async def test_another_keyring_cannot_read(db: str, keyring: FileKeyring,
                                           tmp_path: Path) -> None:
    """A log opened with another keyring names the problem (`KeyUnavailable`)."""
    async with open_log(db, keyring=keyring) as log:
        created = await log.checkpoints.create(_record())
    other = init_keyring(tmp_path / "other.json")
    async with open_log(db, keyring=other) as log:
        with pytest.raises(KeyUnavailable, match="another keyring"):
            await log.checkpoints.read("t", "s1", created.checkpoint_id or "")


def _blob_rows(tmp_path: Path) -> dict[bytes, bytes]:
    with sqlite3.connect(tmp_path / "log.db") as connection:
        return dict(connection.execute("SELECT digest, data FROM blobs"))


def _sql(tmp_path: Path, sql: str, *args: Any) -> None:
    with sqlite3.connect(tmp_path / "log.db") as connection:
        connection.execute(sql, args)


async def test_ciphertext_swapped_between_two_checkpoints_is_refused(
        sealed: OpenLog, tmp_path: Path) -> None:
    """Two checkpoints' state blobs swapped in the table: neither is served."""
    one = await sealed.checkpoints.create(_record(state={"n": 1}))
    two = await sealed.checkpoints.create(_record(state={"n": 2}))
    (first, a), (second, b) = _blob_rows(tmp_path).items()
    _sql(tmp_path, "UPDATE blobs SET data = ? WHERE digest = ?", b, first)
    _sql(tmp_path, "UPDATE blobs SET data = ? WHERE digest = ?", a, second)
    for record in (one, two):
        with pytest.raises(CorruptBlob):
            await sealed.checkpoints.read("t", "s1", record.checkpoint_id or "")


async def test_ciphertext_moved_to_another_tenant_is_refused(
        sealed: OpenLog, tmp_path: Path) -> None:
    """A blob copied into another tenant under its address does not open there (the
    tenant is in its associated data), though that tenant has a key of the same subject."""
    await sealed.checkpoints.create(_record())
    theirs = await sealed.checkpoints.create(_record(tenant="u", state={"other": True}))
    ours = next(digest for digest, data in _blob_rows(tmp_path).items())
    _sql(tmp_path, "UPDATE blobs SET data = (SELECT data FROM blobs WHERE tenant_id = 't'), "
                   "digest = ? WHERE tenant_id = 'u'", ours)
    _sql(tmp_path, "UPDATE checkpoints SET state_digest = ? WHERE tenant_id = 'u'", ours)
    with pytest.raises(SealRefused, match="does not open in tenant 'u'"):
        await sealed.checkpoints.read("u", "s1", theirs.checkpoint_id or "")


async def test_a_sealed_field_moved_to_another_thread_is_refused(
        sealed: OpenLog, tmp_path: Path) -> None:
    """One thread's sealed metadata put into another thread's event is refused on read
    (the envelope names the stream it was sealed in)."""
    threads = sealed.checkpoints.threads
    await threads.put("t", "a", "c1", state=Payload("json", b"1"), metadata={"m": "A"})
    await threads.put("t", "b", "c1", state=Payload("json", b"2"), metadata={"m": "B"})
    with sqlite3.connect(tmp_path / "log.db") as connection:
        rows = dict(connection.execute("SELECT stream_id, data FROM events"))
    import msgspec

    body = msgspec.json.decode(rows["thread:b"])
    body["metadata"] = msgspec.json.decode(rows["thread:a"])["metadata"]
    _sql(tmp_path, "UPDATE events SET data = ? WHERE stream_id = 'thread:b'",
         msgspec.json.encode(body))
    with pytest.raises(SealRefused, match="moved"):
        [event async for event in sealed.read_stream("t", "thread:b")]


async def test_a_plaintext_state_substituted_is_refused(
        sealed: OpenLog, tmp_path: Path) -> None:
    """A plaintext blob put in place of the sealed one, under its own SHA-256 and with the
    view pointing at it, is refused, never read."""
    created = await sealed.checkpoints.create(_record())
    plain = b'{"forged": true}'
    digest = hashlib.sha256(plain).digest()
    _sql(tmp_path, "UPDATE blobs SET data = ?, digest = ?", plain, digest)
    _sql(tmp_path, "UPDATE checkpoints SET state_digest = ?", digest)
    with pytest.raises(SealRefused, match="not sealed"):
        await sealed.checkpoints.read("t", "s1", created.checkpoint_id or "")


async def test_plaintext_metadata_substituted_is_refused(
        sealed: OpenLog, tmp_path: Path) -> None:
    """Metadata written in the clear into a view row is refused, never listed."""
    await sealed.checkpoints.create(_record())
    _sql(tmp_path, "UPDATE checkpoints SET metadata = '{\"who\": \"forged\"}'")
    with pytest.raises(SealRefused, match="plaintext"):
        await sealed.checkpoints.list("t", "s1")


async def test_erasure_destroys_the_key_and_keeps_the_records(sealed: OpenLog) -> None:
    """After erase: reads raise SubjectErased, the records list with their metadata marked
    erased, the erasure event names who and why, verify holds, another subject reads."""
    gone = await sealed.checkpoints.create(_record())
    kept = await sealed.checkpoints.create(_record(session="s2"))
    assert 1 == await sealed.erase("t", "s1", reason="GDPR art. 17", actor="dpo")
    with pytest.raises(SubjectErased):
        await sealed.checkpoints.read("t", "s1", gone.checkpoint_id or "")
    listed = await sealed.checkpoints.list("t", "s1")
    erasures = [recorded.event async for recorded in sealed.read_stream("t", "erasure:s1")]
    assert ([gone.checkpoint_id], [{"$erased": True}], {"secret": "MARKER-STATE"},
            [("s1", "GDPR art. 17", "dpo", 1)], True) == (
        [record.checkpoint_id for record in listed], [record.metadata for record in listed],
        await sealed.checkpoints.read("t", "s2", kept.checkpoint_id or ""),
        [(e.subject, e.reason, e.actor, e.generations) for e in erasures],  # type: ignore[attr-defined]
        (await sealed.verify()).ok)


async def test_an_erased_subject_is_not_written_again_unless_reopened(sealed: OpenLog) -> None:
    """A write to an erased subject is refused; reopen_subject gives it a new key, and
    what was erased stays erased."""
    old = await sealed.checkpoints.create(_record())
    await sealed.erase("t", "s1")
    with pytest.raises(SubjectErased):
        await sealed.checkpoints.create(_record())
    assert 2 == await sealed.reopen_subject("t", "s1")
    new = await sealed.checkpoints.create(_record(state={"again": 1}))
    assert {"again": 1} == await sealed.checkpoints.read("t", "s1", new.checkpoint_id or "")
    with pytest.raises(SubjectErased):
        await sealed.checkpoints.read("t", "s1", old.checkpoint_id or "")


async def test_erasure_is_seen_by_a_process_that_opens_the_log_later(
        db: str, keyring: FileKeyring) -> None:
    """The key is destroyed in the database: a fresh opening cannot read the subject, and
    a second erase destroys nothing and appends nothing."""
    async with open_log(db, keyring=keyring) as log:
        created = await log.checkpoints.create(_record())
        await log.erase("t", "s1")
    async with open_log(db, keyring=keyring) as log:
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("t", "s1", created.checkpoint_id or "")
        assert (0, 1) == (await log.erase("t", "s1"),
                          len([e async for e in log.read_stream("t", "erasure:s1")]))


async def test_a_named_subject_shares_one_key_across_sessions(sealed: OpenLog) -> None:
    """append(subject=...) seals under the named subject: erasing it erases both streams."""
    from eventlog.testing.events import Noted

    await sealed.append("t", "one", [Noted(text="x")], attach=[b"state one"],
                        subject="customer-7")
    await sealed.append("t", "two", [Noted(text="y")], attach=[b"state two"],
                        subject="customer-7")
    digests = list(await sealed.blob_refs("t"))
    await sealed.erase("t", "customer-7")
    for digest in digests:
        with pytest.raises(SubjectErased):
            await sealed.get_blob("t", digest)


def test_a_keyring_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    """init_keyring makes a 0600 file, refuses to overwrite it, its repr shows no key, and
    a keyring readable by others is refused."""
    path = tmp_path / "k.json"
    ring = init_keyring(path)
    with pytest.raises(InvalidInput, match="never overwritten"):
        init_keyring(path)
    import json

    secret = json.loads(path.read_text())["kek"]
    path.chmod(0o644)
    with pytest.raises(InvalidInput, match="readable by others"):
        FileKeyring(path)
    assert (0o644 & 0o777, False) == (path.stat().st_mode & 0o777, secret in repr(ring))


async def test_a_log_without_keyring_is_exactly_as_before(db: str, tmp_path: Path) -> None:
    """No keyring: states are stored in the clear under their plain SHA-256, no key rows."""
    async with open_log(db) as log:
        await log.checkpoints.create(_record())
        keys = await log.storage.subject_keys("t", "s1")
    assert ([], True) == (keys, b"MARKER-STATE" in _stored_bytes(tmp_path))


async def test_export_import_carries_ciphertext_and_the_erasure(
        db: str, keyring: FileKeyring, tmp_path: Path) -> None:
    """An encrypted tenant exported (no keyring needed) and imported into a fresh log
    without a keyring: the file holds no marker, the import verifies, lists, and refuses
    to read a state clearly; the erasure event travels too. With the keyring the copy
    reads (the wrapped keys travel), and the erased subject stays erased."""
    import io

    from eventlog.transfer import export_log, import_log

    async with open_log(db, keyring=keyring) as log:
        created = await log.checkpoints.create(_record())
        await log.checkpoints.create(_record(session="gone"))
        await log.erase("t", "gone", reason="asked")
    sink = io.BytesIO()
    async with open_log(db) as log:
        await export_log(log, sink, tenant_id="t")
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    async with open_log(target) as copy:
        sink.seek(0)
        await import_log(copy, sink)
        with pytest.raises(KeyringRequired, match="open the log with its keyring"):
            await copy.checkpoints.read("t", "s1", created.checkpoint_id or "")
        erasures = [e async for e in copy.read_stream("t", "erasure:gone")]
        assert (False, True, 1, 1) == (
            b"MARKER" in sink.getvalue(), (await copy.verify()).ok,
            len(await copy.checkpoints.list("t", "s1")), len(erasures))
    async with open_log(target, keyring=keyring) as copy:
        assert {"secret": "MARKER-STATE"} == await copy.checkpoints.read(
            "t", "s1", created.checkpoint_id or "")
        with pytest.raises(SubjectErased):
            await copy.checkpoints.read("t", "gone", (await copy.checkpoints.list(
                "t", "gone"))[0].checkpoint_id or "")


async def test_a_record_names_its_subject(sealed: OpenLog) -> None:
    """CheckpointRecord(subject=...) seals under that subject: erasing the customer erases
    both of its sessions, and leaves a third session of its own subject readable."""
    one = await sealed.checkpoints.create(_record(session="a", subject="customer-7"))
    two = await sealed.checkpoints.create(_record(session="b", subject="customer-7"))
    own = await sealed.checkpoints.create(_record(session="c"))
    await sealed.erase("t", "customer-7")
    for session, record in (("a", one), ("b", two)):
        with pytest.raises(SubjectErased):
            await sealed.checkpoints.read("t", session, record.checkpoint_id or "")
    assert {"secret": "MARKER-STATE"} == await sealed.checkpoints.read(
        "t", "c", own.checkpoint_id or "")


async def test_no_marker_is_stored_in_the_file_stores_files(
        keyring: FileKeyring, tmp_path: Path) -> None:
    """The file store (events, blobs, views, ``keys.json``): no marker in any file."""
    clock = FakeClock()
    store = tmp_path / "store"
    async with open_log(f"file://{store}", keyring=keyring, clock=clock,
                        interrupt_options=OPTIONS) as log:
        await populate(log, clock)
        verified = (await log.verify()).ok
    stored = b"".join(path.read_bytes() for path in store.rglob("*") if path.is_file())
    assert (True, True, []) == (verified, len(stored) > 0,
                                [marker for marker in MARKERS if marker.encode() in stored])


@pytest.mark.postgres
async def test_on_postgresql_swapped_and_plaintext_states_are_refused(
        keyring: FileKeyring, migrated_pg_schema: str) -> None:
    """PostgreSQL for real: two checkpoints' sealed states swapped in the blobs table are
    `CorruptBlob`; a plaintext state put in place (under its own SHA-256, the view
    pointing at it) is `SealRefused`; metadata written in the clear is `SealRefused`."""
    schema = migrated_pg_schema
    async with open_log(PG_URL, schema=schema, keyring=keyring) as log:
        one = await log.checkpoints.create(_record(state={"n": 1}))
        two = await log.checkpoints.create(_record(state={"n": 2}))
        (a, first), (b, second) = [(row["digest"], row["data"]) for row in await _pg(
            f'SELECT digest, data FROM "{schema}".blobs ORDER BY digest')]
        await _pg(f'UPDATE "{schema}".blobs SET data = $1 WHERE digest = $2', second, a)
        await _pg(f'UPDATE "{schema}".blobs SET data = $1 WHERE digest = $2', first, b)
        for record in (one, two):
            with pytest.raises(CorruptBlob):
                await log.checkpoints.read("t", "s1", record.checkpoint_id or "")
        plain = b'{"forged": true}'
        digest = hashlib.sha256(plain).digest()
        await _pg(f'UPDATE "{schema}".blobs SET data = $1, digest = $2 WHERE digest = $3',
                  plain, digest, a)
        await _pg(f'UPDATE "{schema}".checkpoints SET state_digest = $1 WHERE '
                  "checkpoint_id = $2", digest, one.checkpoint_id)
        with pytest.raises(SealRefused, match="not sealed"):
            await log.checkpoints.read("t", "s1", one.checkpoint_id or "")
        await _pg(f'UPDATE "{schema}".checkpoints SET metadata = $1', '{"who": "forged"}')
        with pytest.raises(SealRefused, match="plaintext"):
            await log.checkpoints.list("t", "s1")


async def test_a_plain_log_opened_with_a_keyring_says_why_it_refuses(
        db: str, keyring: FileKeyring) -> None:
    """A log written without a keyring, opened with one, refuses its plaintext and the
    refusal says the likely cause (a keyring added later) and what to do."""
    async with open_log(db) as log:
        await log.checkpoints.create(_record())
    async with open_log(db, keyring=keyring) as log:
        with pytest.raises(SealRefused, match="written before the log had a keyring"):
            await log.checkpoints.list("t", "s1")
