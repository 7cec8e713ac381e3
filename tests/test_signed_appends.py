"""Only the application writes the log (issue 40 §1): appends are signed with the keyring's
writer key, and an event the database administrator inserts (correctly chained, with SQL
from outside the library, on a real SQLite file and the PostgreSQL server) is named by
`verify` with the public key alone, refused by what decides from the log, and told from a
real one by a stranger holding the public key and a signed head.
"""

from __future__ import annotations

import asyncio
import io
import os
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, ForgedEvent, open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.crypto import FileKeyring, add_writer_key, init_keyring, rotate_writer_key
from eventlog.events.retention import RETENTION_STREAM, LegalHoldReleased
from eventlog.signing import generate_key_pair
from eventlog.storage.migrate import head_revision
from eventlog.testing.events import Noted
from eventlog.transfer import export_log, import_log
from eventlog.writer_keys import KEY_ID_SIZE, WriterKeys, public_pem
from tests.cli.helpers import make_runner
from tests.conftest import BackendTarget
from tests.signing_outside import forge, rows, signature_of

signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)
sqlite_signed = pytest.mark.parametrize("target", ["sqlite-sealed"], indirect=True)


def public_keys(target: BackendTarget) -> list[str]:
    """The writer public keys of the target's keyring, as PEM (what an auditor is given)."""
    assert target.keyring is not None
    return [public_pem(key) for key in
            WriterKeys(FileKeyring(target.keyring).writer_public_keys).public_keys()]


def bogus_signature(target: BackendTarget) -> bytes:
    """72 bytes naming the real writer key's id, with a signature the DBA made up."""
    assert target.keyring is not None
    key_id = WriterKeys(FileKeyring(target.keyring).writer_public_keys).ids[0]
    return bytes.fromhex(key_id) + os.urandom(64)


def record(session: str, step: int) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.UUID(int=1),
                            step=step, state={"step": step, "who": session})


async def held_sessions(target: BackendTarget) -> None:
    """Two sessions of three checkpoints each; ``held`` under legal hold."""
    async with target.open() as log:
        for session in ("held", "free"):
            for step in range(3):
                await log.checkpoints.create(record(session, step))
        await log.retention.hold("t", "held", reason="litigation")


async def verified(target: BackendTarget, **options: object) -> list[tuple[str, str, int]]:
    """verify's findings as (stream, kind, version), the log opened with ``options``."""
    async with open_log(target.url, **{**target.options(), **options}) as log:
        report = await log.verify()
    return [(p.stream_id, p.kind, p.version) for p in report.problems]


@signed_stores
async def test_every_append_is_signed_and_verifies(target: BackendTarget) -> None:
    """With a keyring that holds a writer key every event carries its signature (the key's
    id first), append and append_batch alike; verify checks each and finds nothing."""
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        await log.checkpoints.create(record("c", 1))
        report = await log.verify()
        key_id = log.signer.key_id if log.signer is not None else ""
    signatures = [await signature_of(target, "t", "s", v) for v in (1, 2)]
    assert ([key_id] * 2, True, 3, True) == (
        [s.hex()[:2 * KEY_ID_SIZE] if s else None for s in signatures], report.ok,
        report.signed_events, report.signatures_checked)


@signed_stores
async def test_verify_with_only_the_public_key_names_forged_and_unsigned_events(
    target: BackendTarget,
) -> None:
    """The DBA appends two correctly chained events behind the log: one with a made-up
    signature, one with none. verify, given only the writer's public key (no keyring),
    names the first forged and the second unsigned; without any key it still names the
    unsigned one and says signatures were not checked."""
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="a")])
        await log.append("t", "other", [Noted(text="b")])
    forged = await forge(target, "t", "s", Noted(text="approve"),
                         signature=bogus_signature(target))
    unsigned = await forge(target, "t", "other", Noted(text="approve"))
    public_only = {"keyring": None, "writer_keys": public_keys(target)}
    found = await verified(target, **public_only)
    async with open_log(target.url, **{**target.options(), "keyring": None}) as log:
        blind = await log.verify()
    assert ([("other", "unsigned", unsigned), ("s", "forged", forged)],
            [("other", "unsigned", unsigned)], False) == (
        sorted(found), [(p.stream_id, p.kind, p.version) for p in blind.problems],
        blind.signatures_checked)


@signed_stores
async def test_a_forged_hold_release_is_refused_not_obeyed(target: BackendTarget) -> None:
    """The issue's attack: a correctly chained ``legal_hold_released`` on the tenant's
    retention stream, its head bumped, by SQL from outside. The hold list and a retention
    pass refuse with ForgedEvent naming the tenant, stream, version and why; nothing of
    the held session is purged."""
    await held_sessions(target)
    version = await forge(target, "t", RETENTION_STREAM,
                          LegalHoldReleased(subject="held", reason="forged"))
    async with target.open() as log:
        with pytest.raises(ForgedEvent) as listed:
            await log.retention.holds("t")
        with pytest.raises(ForgedEvent) as applied:
            await log.retention.apply("t", keep_latest=1)
        kept = [len(await log.checkpoints.list("t", s)) for s in ("held", "free")]
    assert (("t", RETENTION_STREAM, version, "unsigned"), [3, 3]) == (
        (listed.value.tenant_id, listed.value.stream_id, listed.value.version,
         listed.value.reason), kept)
    assert applied.value.reason == "unsigned"


@signed_stores
def test_hold_list_and_retention_apply_refuse_a_forged_release_from_the_command_line(
    target: BackendTarget, capsys: pytest.CaptureFixture[str],
) -> None:
    """``eventlog hold --list`` and ``eventlog retention apply`` exit 1 with the one-line
    error naming the forged event; the held session keeps every checkpoint."""
    asyncio.run(held_sessions(target))
    asyncio.run(forge(target, "t", RETENTION_STREAM, LegalHoldReleased(subject="held"),
                      signature=bogus_signature(target)))
    run = make_runner(capsys, target)
    assert target.keyring is not None
    keyring = ["--keyring", target.keyring]
    listed = run("hold", "t", "--list", *keyring)
    applied = run("retention", "apply", "t", "--keep-latest", "1", *keyring)

    async def kept() -> int:
        async with target.open() as log:
            return len(await log.checkpoints.list("t", "held"))

    assert (EXIT_FINDINGS, EXIT_FINDINGS, 3) == (listed.status, applied.status,
                                                 asyncio.run(kept()))
    assert "forged event: stream 'retention'" in listed.err
    assert "forged event: stream 'retention'" in applied.err


@signed_stores
async def test_a_log_written_before_signing_verifies_and_is_signed_from_then_on(
    target: BackendTarget, tmp_path: Path,
) -> None:
    """A log written with a keyring that holds no writer key (as every keyring before this
    change): its keyring gets a writer key, the log reopens, verifies, keeps its hold, and
    signs from its next append on; verify says from where. An unsigned event the DBA
    appends afterwards to a stream of the old events is named unsigned and refused."""
    ring = tmp_path / "old-keyring.json"
    init_keyring(ring, writer=False)
    target.keyring = str(ring)
    await held_sessions(target)
    assert [] == await verified(target)
    add_writer_key(ring)
    async with target.open() as log:
        before = await log.verify()
        holds = [hold.subject for hold in await log.retention.holds("t")]
        await log.checkpoints.create(record("free", 3))
        after = await log.verify()
    start = (await rows(target, "SELECT min(position) FROM events WHERE signature IS NOT "
                                "NULL"))[0][0]
    assert (True, {}, ["held"], True, {"t": start}, 1) == (
        before.ok, before.signing_starts, holds, after.ok, after.signing_starts,
        after.signed_events)
    version = await forge(target, "t", RETENTION_STREAM, LegalHoldReleased(subject="held"))
    assert [(RETENTION_STREAM, "unsigned", version)] == await verified(target)
    async with target.open() as log:
        with pytest.raises(ForgedEvent):
            await log.retention.holds("t")


@sqlite_signed
async def test_key_rotation_keeps_old_events_verifiable(target: BackendTarget) -> None:
    """Events signed before `rotate_writer_key` still verify (the keyring keeps the old
    public key); new ones are signed by the new key; the new public key alone calls the
    old events forged, both keys find nothing."""
    assert target.keyring is not None
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="old")])
    old_key = public_keys(target)
    rotate_writer_key(target.keyring)
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="new")])
        report = await log.verify()
    new_key = public_keys(target)[:1]
    ids = [(await signature_of(target, "t", "s", v) or b"")[:KEY_ID_SIZE].hex()
           for v in (1, 2)]
    assert (True, list(WriterKeys(FileKeyring(target.keyring).writer_public_keys).ids)[::-1]) == (
        report.ok, ids)
    assert [("s", "forged", 1)] == await verified(target, keyring=None, writer_keys=new_key)
    assert [] == await verified(target, keyring=None, writer_keys=[*new_key, *old_key])


@signed_stores
async def test_signatures_survive_export_and_import(target: BackendTarget,
                                                    tmp_path: Path) -> None:
    """An export carries each event's signature and an import into another log stores it
    byte for byte: the copy verifies with the writer's public key alone. A file whose
    signature was changed is refused (ForgedEvent) and nothing of it is written."""
    async with target.open() as log:
        await log.checkpoints.create(record("s1", 1))
        await log.append("t", "notes", [Noted(text="a"), Noted(text="b")])
        sink = io.BytesIO()
        await export_log(log, sink, tenant_id="t")
        source = {e.event_id: e.signature for e in (await log.read_all(tenant_id="t")).events}
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    async with open_log(copy, keyring=target.keyring) as log:
        await import_log(log, io.BytesIO(sink.getvalue()))
        copied = {e.event_id: e.signature for e in (await log.read_all(tenant_id="t")).events}
    async with open_log(copy, writer_keys=public_keys(target)) as log:
        report = await log.verify()
    assert (source, True, len(source)) == (copied, report.ok, report.signed_events)
    text = sink.getvalue().decode()
    first = next(iter(source.values()))
    assert first is not None
    tampered = text.replace(first.hex(), first[:KEY_ID_SIZE].hex() + "00" * 64, 1)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    async with open_log(other, keyring=target.keyring) as log:
        with pytest.raises(ForgedEvent) as refused:
            await import_log(log, io.BytesIO(tampered.encode()))
        assert ("forged", []) == (refused.value.reason,
                                  (await log.read_all(tenant_id="t")).events)


@sqlite_signed
def test_a_stranger_with_the_public_key_and_a_signed_head_tells_forged_from_real(
    target: BackendTarget, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """The operator signs a tree head that covers a forged event (the tree takes in every
    row). A stranger given the head, the operator's and the writer's public keys, and an
    inclusion proof checks it with no database: the real event holds, the forged one is
    refused (exit 1) as forged; `eventlog keys public` wrote the writer key they use."""
    async def write() -> str:
        async with target.open() as log:
            result = await log.append("t", "s", [Noted(text="real")])
            return str(result.event_ids[0])
    real = asyncio.run(write())
    asyncio.run(forge(target, "t", "s", Noted(text="forged"),
                      signature=bogus_signature(target)))
    forged = asyncio.run(rows(target, "SELECT event_id FROM events WHERE stream_version = 2"))
    forged_id = str(uuid.UUID(str(forged[0][0])))
    private, public = generate_key_pair()
    (tmp_path / "op.pem").write_bytes(private)
    (tmp_path / "op.pub").write_bytes(public)
    run = make_runner(capsys, target)
    assert target.keyring is not None
    writer = str(tmp_path / "writer.pub")
    assert EXIT_OK == run("keys", "public", target.keyring, "-o", writer, url=False).status
    head = str(tmp_path / "head.txt")
    assert EXIT_OK == run("tree-head", "t", "--key", str(tmp_path / "op.pem"), "--name",
                          "example.org/log", "-o", head).status
    outcomes = []
    for event_id in (real, forged_id):
        proof = str(tmp_path / f"{event_id}.json")
        assert EXIT_OK == run("prove", "t", event_id, "--head", head, "-o", proof).status
        checked = run("check-proof", proof, "--head", head, "--key", str(tmp_path / "op.pub"),
                      "--writer-key", writer, url=False)
        outcomes.append((checked.status, "signed by writer key" in checked.out,
                         "forged:" in checked.err))
    assert [(EXIT_OK, True, False), (EXIT_FINDINGS, False, True)] == outcomes


@sqlite_signed
async def test_a_kek_rotation_to_a_new_keyring_keeps_the_signatures_checkable(
    target: BackendTarget, tmp_path: Path,
) -> None:
    """`rotate_keys` to a new keyring file (with a writer key of its own) gives it the old
    writer public keys to keep: the log opened with the new keyring verifies what the old
    key signed and signs with its own from then on."""
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="before")])
        await log.checkpoints.create(record("c", 1))
        new = init_keyring(tmp_path / "new.json")
        await log.rotate_keys(str(new.path))
    target.keyring = str(new.path)
    async with target.open() as log:
        await log.append("t", "s", [Noted(text="after")])
        report = await log.verify()
    ids = {(await signature_of(target, "t", "s", v) or b"")[:KEY_ID_SIZE].hex()
           for v in (1, 2)}
    assert (True, [], 2) == (report.ok, report.problems, len(ids))


@sqlite_signed
def test_the_operator_signs_no_tree_head_over_a_forged_event(
    target: BackendTarget, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """`eventlog tree-head` on a log opened with its keyring takes in no event the writer
    key did not sign: it exits 1 naming the forged one, and signs nothing."""
    async def write() -> None:
        async with target.open() as log:
            await log.append("t", "s", [Noted(text="real")])
    asyncio.run(write())
    asyncio.run(forge(target, "t", "s", Noted(text="forged"),
                      signature=bogus_signature(target)))
    private, _ = generate_key_pair()
    (tmp_path / "op.pem").write_bytes(private)
    assert target.keyring is not None
    head = tmp_path / "head.txt"
    ran = make_runner(capsys, target)("tree-head", "t", "--key", str(tmp_path / "op.pem"),
                                      "--name", "example.org/log", "-o", str(head),
                                      "--keyring", target.keyring)
    assert (EXIT_FINDINGS, True, False) == (ran.status, "forged event: stream 's' version 2"
                                            in ran.err, head.exists())


@signed_stores
async def test_a_database_of_the_schema_before_signatures_upgrades_and_is_signed(
    target: BackendTarget, tmp_path: Path,
) -> None:
    """A database as today's main leaves it (no ``signature`` column, stamped
    0018_blob_toast, written with a keyring that holds no writer key) opens with a writer
    key: the migration adds the column, the old events verify as they were, and the next
    append is signed."""
    ring = tmp_path / "old-keyring.json"
    init_keyring(ring, writer=False)
    target.keyring = str(ring)
    await held_sessions(target)
    await rows(target, "ALTER TABLE events DROP COLUMN signature")
    await rows(target, "DROP TABLE keyrings")  # 0020's: the schema as 0018 left it
    await rows(target, "UPDATE alembic_version SET version_num = '0018_blob_toast'")
    add_writer_key(ring)
    async with target.open() as log:
        revision = log.schema_revision
        before = await log.verify()
        await log.append("t", "after", [Noted(text="signed")])
        after = await log.verify()
    assert (head_revision(), True, 0, True, 1) == (
        revision, before.ok, before.signed_events, after.ok, after.signed_events)
