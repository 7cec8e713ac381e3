"""Encryption a newcomer cannot switch off by accident (issue 40 §4): the log records that
it is encrypted and under which key-encryption key (`eventlog.log._mode`); a write without
the keyring, or with another one, is refused before anything is written and names the key
the log expects; reads that need no key work without one; what the DBA can do to the
record is what the module says."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.checkpoints import Payload
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.errors import InvalidInput, LogNotEncrypted, WriteNeedsKeyring, WrongKeyring
from tests.conftest import PG_URL, BackendTarget

stores = pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)
"""The backends a log outlives its process on (a memory log is fresh at every open)."""


def _record(session: str) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.uuid4(),
                            state={"secret": "MARKER"}, metadata={"who": "MARKER"})


def _open(target: BackendTarget, keyring: Any = None, **more: Any) -> Any:
    options = {name: value for name, value in target.options().items() if name != "keyring"}
    if keyring is not None:
        options["keyring"] = keyring
    return open_log(target.url, **options, **more)


async def _held(log: OpenLog) -> tuple[int, int]:
    """What the log holds: its events, its subject keys."""
    assert await log.wait_readable()
    events = len((await log.read_all(limit=10_000)).events)
    return events, len(await log.storage.subject_keys_page(None, 10_000))


@pytest.fixture
def keyring(tmp_path: Path) -> FileKeyring:
    return init_keyring(tmp_path / "keyring.json")


@pytest.fixture
def other(tmp_path: Path) -> FileKeyring:
    return init_keyring(tmp_path / "other.json")


@stores
async def test_without_the_keyring_a_write_is_refused_and_names_the_key(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """An encrypted log opened without its keyring: a checkpoint, a thread put and a batch
    are refused (`WriteNeedsKeyring` naming the KEK id), nothing written; verify, listings,
    the log and the tree's proofs still work. An erasure seals nothing, but the
    keyring's writer key signs the tenant's events, so its record needs the keyring too
    (tests/test_signed_appends.py): refused, nothing destroyed."""
    async with _open(target, keyring) as log:
        created = await log.checkpoints.create(_record("s1"))
        before = await _held(log)
    async with _open(target) as log:
        for write in (lambda: log.checkpoints.create(_record("s2")),
                      lambda: log.checkpoints.threads.put(
                          "t", "th", "c1", state=Payload("json", b'"MARKER"'))):
            with pytest.raises(WriteNeedsKeyring, match=keyring.key_id) as refused:
                await write()
            assert (keyring.key_id,) == refused.value.expected
        after = await _held(log)
        listed = await log.checkpoints.list("t", "s1")
        head = await log.tree_head("t")
        proof = await log.prove_inclusion("t", (await log.read_all()).events[0].event_id,
                                          head.size)
        assert ((await log.verify()).ok, [created.checkpoint_id], True) == (
            True, [record.checkpoint_id for record in listed], proof is not None)
        with pytest.raises(InvalidInput, match="signed"):
            await log.erase("t", "s1", reason="asked")
        kept = await _held(log)
    assert (before, before) == (after, kept)


@stores
async def test_another_keyring_is_refused_before_a_key_is_wrapped_under_it(
        target: BackendTarget, keyring: FileKeyring, other: FileKeyring) -> None:
    """A write with another keyring, to a new subject, is refused (`WrongKeyring` naming
    the log's KEK and the one given): no data key is wrapped under the stranger's KEK, and
    the right keyring then reads and writes as before."""
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s1"))
        before = await _held(log)
    async with _open(target, other) as log:
        with pytest.raises(WrongKeyring) as refused:
            await log.checkpoints.create(_record("new-subject"))
        assert ((keyring.key_id,), other.key_id) == (refused.value.expected,
                                                     refused.value.given)
        assert [True, True] == [kek_id in str(refused.value)
                                for kek_id in (keyring.key_id, other.key_id)]
        with pytest.raises(WrongKeyring):
            await log.reopen_subject("t", "s1")
        with pytest.raises(WrongKeyring):
            await log.erase("t", "s1")  # refused before its key is destroyed
        after = await _held(log)
        assert [True] == [row.wrapped is not None
                          for row in await log.storage.subject_keys("t", "s1")]
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("new-subject"))
        assert ["MARKER"] == [(await log.checkpoints.read(
            "t", "new-subject", record.checkpoint_id or ""))["secret"]
            for record in await log.checkpoints.list("t", "new-subject")]
    assert before == after


@stores
async def test_a_keyring_of_the_right_id_that_cannot_unwrap_is_refused(
        target: BackendTarget, keyring: FileKeyring, tmp_path: Path) -> None:
    """A keyring file claiming the log's KEK id with another key fails the check value."""
    import json

    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s1"))
    forged = tmp_path / "forged.json"
    body = json.loads(init_keyring(tmp_path / "fresh.json").path.read_text())
    forged.write_text(json.dumps({**body, "kek_id": keyring.key_id}))
    forged.chmod(0o600)
    async with _open(target, FileKeyring(forged)) as log:
        with pytest.raises(WrongKeyring, match="another under that id"):
            await log.checkpoints.create(_record("s2"))


@stores
async def test_a_plain_log_refuses_a_keyrings_sealed_writes(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """A log written without a keyring, opened with one: a write that would seal is refused
    (`LogNotEncrypted`), nothing written; the plain log still takes plain writes."""
    async with _open(target) as log:
        await log.checkpoints.create(_record("s1"))
        before = await _held(log)
    async with _open(target, keyring) as log:
        with pytest.raises(LogNotEncrypted):
            await log.checkpoints.create(_record("s2"))
        after = await _held(log)
    async with _open(target) as log:
        await log.checkpoints.create(_record("s2"))
    assert before == after


@stores
async def test_a_log_encrypted_before_the_record_is_still_guarded(
        target: BackendTarget, keyring: FileKeyring, other: FileKeyring) -> None:
    """The record deleted (as a log written before it existed has none): its subject keys
    still say it is encrypted, and under which KEK: without a keyring, or with another,
    writes are refused; the right keyring writes, and records itself again."""
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s1"))
    await _sql(target, "DELETE FROM {keyrings}")
    for ring, refusal in ((None, WriteNeedsKeyring), (other, WrongKeyring)):
        async with _open(target, ring) as log:
            with pytest.raises(refusal, match=keyring.key_id):
                await log.checkpoints.create(_record("s2"))
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s2"))
        assert [keyring.key_id] == [row.kek_id for row in await log.storage.keyrings()]


@stores
async def test_what_the_dba_can_do_to_the_record(
        target: BackendTarget, keyring: FileKeyring, other: FileKeyring) -> None:
    """Naming another KEK in the record makes the right keyring refuse (a denial of
    service, loud), and never lets the other keyring write; deleting the record and every
    key (every subject's data destroyed) makes the log look fresh: the next keyring to
    write records itself, and nothing of before reads."""
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s1"))
    await _sql(target, "UPDATE {keyrings} SET kek_id = '" + other.key_id + "'")
    async with _open(target, keyring) as log:
        with pytest.raises(WrongKeyring):
            await log.checkpoints.create(_record("s2"))
    async with _open(target, other) as log:
        with pytest.raises(WrongKeyring, match="another under that id"):
            await log.checkpoints.create(_record("s2"))
    await _sql(target, "DELETE FROM {keyrings}", "DELETE FROM {subject_keys}")
    async with _open(target, other) as log:
        await log.checkpoints.create(_record("s2"))
        assert [other.key_id] == [row.kek_id for row in await log.storage.keyrings()]


@stores
async def test_a_rotation_moves_the_record_to_the_new_keyring(
        target: BackendTarget, keyring: FileKeyring, other: FileKeyring) -> None:
    """After `rotate_keys`, the record names the new KEK only: the new keyring writes, the
    old one is refused."""
    async with _open(target, keyring) as log:
        await log.checkpoints.create(_record("s1"))
        await log.rotate_keys(other)
        assert [other.key_id] == [row.kek_id for row in await log.storage.keyrings()]
    async with _open(target, keyring) as log:
        with pytest.raises(WrongKeyring, match=other.key_id):
            await log.checkpoints.create(_record("s2"))
    async with _open(target, other) as log:
        await log.checkpoints.create(_record("s2"))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_keyless_writer_sees_another_process_encrypt_a_fresh_log(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """Two logs open on one fresh store, one without a keyring, which writes nothing sealed:
    once the other's first sealed write is made, the keyless one's writes are refused."""
    async with _open(target) as keyless:
        await keyless.retention.hold("t", "someone", reason="nothing sealed")
        async with _open(target, keyring) as sealed:
            await sealed.checkpoints.create(_record("s1"))
        with pytest.raises(WriteNeedsKeyring):
            await keyless.checkpoints.create(_record("s2"))


@stores
async def test_a_log_written_before_the_record_without_a_keyring_is_plain(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """A log upgraded from before the record (migration 0020; the file store on opening)
    that holds events but no key is recorded as written without a keyring: a keyring's
    write to it is refused; one that held nothing is fresh."""
    async with _open(target) as log:
        await log.checkpoints.create(_record("s1"))
    await _before_the_record(target)
    async with _open(target, keyring) as log:
        with pytest.raises(LogNotEncrypted):
            await log.checkpoints.create(_record("s2"))


async def _before_the_record(target: BackendTarget) -> None:
    """The store as this code's predecessor left it: no keyrings recorded, the schema at
    revision 0019 (the file store: keys.json without its keyrings)."""
    if target.name == "file":
        (Path(target.url.removeprefix("file://")) / "keys.json").unlink()
        return
    statements = ["DROP TABLE {keyrings}",
                  "UPDATE {alembic_version} SET version_num = '0019_signatures'"]
    if target.name == "sqlite":
        with sqlite3.connect(target.url.removeprefix("sqlite:///")) as connection:
            for statement in statements:
                connection.execute(statement.format(keyrings="keyrings",
                                                    alembic_version="alembic_version"))
        return
    import asyncpg

    connection = await asyncpg.connect(PG_URL)
    try:
        for statement in statements:
            await connection.execute(statement.format(
                keyrings=f'"{target.schema}".keyrings',
                alembic_version=f'"{target.schema}".alembic_version'))
    finally:
        await connection.close()


async def _sql(target: BackendTarget, *statements: str) -> None:
    """The DBA's edits, made from outside the library."""
    tables = {"keyrings": "keyrings", "subject_keys": "subject_keys"}
    if target.name == "sqlite":
        path = target.url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as connection:
            for statement in statements:
                connection.execute(statement.format(**tables))
        return
    if target.name == "file":
        import json

        keys = Path(target.url.removeprefix("file://")) / "keys.json"
        stored = json.loads(keys.read_text())
        for statement in statements:
            if statement.startswith("DELETE FROM {keyrings}"):
                stored["keyrings"] = []
            elif statement.startswith("DELETE FROM {subject_keys}"):
                stored["keys"] = []
            else:
                kek_id = statement.split("'")[1]
                stored["keyrings"] = [{**row, "kek_id": kek_id} for row in stored["keyrings"]]
        keys.write_text(json.dumps(stored))
        return
    import asyncpg

    connection = await asyncpg.connect(PG_URL)
    try:
        for statement in statements:
            await connection.execute(statement.format(**{
                name: f'"{target.schema}".{table}' for name, table in tables.items()}))
    finally:
        await connection.close()
