"""Erasure that a backup cannot undo (issue 40 §2): the database administrator saves a
subject's `subject_keys` rows before `erase` and writes them back after (after a reopening
too, and in a copy after deleting the erased row and importing an older export), with SQL
from outside the library on a real SQLite file and the PostgreSQL server. The log's own
erasure stream decides: the restored key is refused (the subject reads and writes as
erased), never handed on by an export, and named by `verify` (``key_restored``).
"""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.errors import ForgedEvent, SubjectErased
from eventlog.events import default_registry
from eventlog.events.erasure import SubjectKeyDestroyed
from eventlog.log._erasures import Erasure, fold_erasure
from eventlog.records import StoredEvent
from eventlog.transfer import FORMAT, FORMAT_VERSION, export_log, import_log
from tests.cli.helpers import make_runner
from tests.conftest import BackendTarget
from tests.signing_outside import forge, rows

signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)


def _record(session: str = "s1", **fields: Any) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.UUID(int=1),
                            **{"state": {"secret": "MARKER-STATE"},
                               "metadata": {"who": "MARKER-META"}, **fields})


async def _saved_keys(target: BackendTarget, subject: str) -> list[tuple[Any, ...]]:
    """The DBA's backup of the subject's key rows: (generation, wrapped)."""
    return await rows(target, "SELECT generation, wrapped FROM subject_keys WHERE "
                              "tenant_id = $1 AND subject = $2 ORDER BY generation",
                      "t", subject)


async def _write_back(target: BackendTarget, subject: str,
                      saved: list[tuple[Any, ...]]) -> None:
    """The DBA writes the backup's keys back over the erased rows."""
    for generation, wrapped in saved:
        await rows(target, "UPDATE subject_keys SET wrapped = $1, erased_at = NULL WHERE "
                           "tenant_id = $2 AND subject = $3 AND generation = $4",
                   wrapped, "t", subject, generation)


async def _findings(target: BackendTarget) -> list[tuple[str, str, int]]:
    async with open_log(target.url, **target.options()) as log:  # no keyring needed
        report = await log.verify()
    return [(problem.stream_id, problem.kind, problem.version) for problem in report.problems]


@signed_stores
async def test_a_key_written_back_after_erasure_is_refused_and_named(
        target: BackendTarget) -> None:
    """The backup's key row, written back after `erase`: the subject reads as erased
    (state refused, metadata marked), a write to it is refused, an export carries the row
    as erased, and verify names the subject; another subject is untouched."""
    async with target.open() as log:
        gone = await log.checkpoints.create(_record())
        kept = await log.checkpoints.create(_record("s2"))
        saved = await _saved_keys(target, "s1")
        assert 1 == await log.erase("t", "s1", reason="asked")
    await _write_back(target, "s1", saved)
    assert all(wrapped is not None for _, wrapped in await _saved_keys(target, "s1"))
    async with target.open() as log:
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("t", "s1", gone.checkpoint_id or "")
        listed = [record.metadata for record in await log.checkpoints.list("t", "s1")]
        with pytest.raises(SubjectErased):
            await log.checkpoints.create(_record())
        other = await log.checkpoints.read("t", "s2", kept.checkpoint_id or "")
        sink = io.BytesIO()
        await export_log(log, sink, tenant_id="t")
    exported = [line for line in sink.getvalue().splitlines() if b'"subject":"s1"' in line
                and b'"kind":"key"' in line]
    assert ([{"$erased": True}], {"secret": "MARKER-STATE"}) == (listed, other)
    assert [b'"wrapped":null' in line for line in exported] == [True]
    assert [("erasure:s1", "key_restored", 1)] == await _findings(target)


@signed_stores
async def test_a_key_written_back_after_a_reopening_is_refused_and_named(
        target: BackendTarget) -> None:
    """Erased, reopened (a new generation) and written again: the first generation's key
    written back from the backup opens nothing; the new generation reads."""
    async with target.open() as log:
        old = await log.checkpoints.create(_record())
        saved = await _saved_keys(target, "s1")
        await log.erase("t", "s1")
        assert 2 == await log.reopen_subject("t", "s1")
        new = await log.checkpoints.create(_record(state={"again": 1}))
    await _write_back(target, "s1", saved)
    async with target.open() as log:
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("t", "s1", old.checkpoint_id or "")
        assert {"again": 1} == await log.checkpoints.read("t", "s1", new.checkpoint_id or "")
    assert [("erasure:s1", "key_restored", 1)] == await _findings(target)


@signed_stores
async def test_a_subject_whose_key_rows_are_deleted_stays_erased(
        target: BackendTarget) -> None:
    """The DBA deletes the erased rows: the log still says erased, so no new key is made
    for a write (it would have started generation 1 again), and a reopening starts above
    the erased generation."""
    async with target.open() as log:
        await log.checkpoints.create(_record())
        await log.erase("t", "s1")
    await rows(target, "DELETE FROM subject_keys WHERE tenant_id = $1 AND subject = $2",
               "t", "s1")
    async with target.open() as log:
        with pytest.raises(SubjectErased):
            await log.checkpoints.create(_record())
        assert [] == await _saved_keys(target, "s1")
        assert 2 == await log.reopen_subject("t", "s1")
    assert [] == await _findings(target)


@signed_stores
async def test_a_copy_importing_an_older_export_after_the_row_is_deleted_stays_erased(
        target: BackendTarget, tmp_path: Any) -> None:
    """A copy holds the erasure; the DBA deletes its erased key row and imports an export
    made before the erasure: the import skips the erased key (nothing restored), the
    subject stays erased and verify holds."""
    async with target.open() as log:
        created = await log.checkpoints.create(_record())
        older = io.BytesIO()
        await export_log(log, older, tenant_id="t")
        await log.erase("t", "s1")
        newer = io.BytesIO()
        await export_log(log, newer, tenant_id="t")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}",
                         keyring=target.keyring)
    async with copy.open() as log:
        newer.seek(0)
        await import_log(log, newer)
    await rows(copy, "DELETE FROM subject_keys WHERE tenant_id = $1 AND subject = $2",
               "t", "s1")
    async with copy.open() as log:
        older.seek(0)
        await import_log(log, older)
        assert [] == await _saved_keys(copy, "s1")
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("t", "s1", created.checkpoint_id or "")
    assert [] == await _findings(copy)


@signed_stores
def test_verify_and_import_on_the_command_line(
        target: BackendTarget, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """``eventlog verify`` exits 1 naming the subject whose erased key was written back;
    ``eventlog import`` of a file holding only a header, the subject's key line marked
    erased and an end record exits non-zero and erases nothing (it exited 0 and destroyed
    the key)."""
    async def written() -> list[tuple[Any, ...]]:
        async with target.open() as log:
            await log.checkpoints.create(_record())
            await log.checkpoints.create(_record("s2"))
            saved = await _saved_keys(target, "s1")
            await log.erase("t", "s1")
        await _write_back(target, "s1", saved)
        return await _saved_keys(target, "s2")

    before = asyncio.run(written())
    run = make_runner(capsys, target)
    verified = run("verify")
    crafted = tmp_path / "crafted.jsonl"
    now = datetime.now(UTC).isoformat()
    crafted.write_text("\n".join(json.dumps(record) for record in [
        {"format": FORMAT, "version": FORMAT_VERSION, "tenant": "t", "session": None,
         "with_state": True, "exported_at": now, "source": "sqlite"},
        {"kind": "key", "subject": "s2", "generation": 1, "kek_id": "k", "wrapped": None,
         "created_at": now, "erased_at": now},
        {"kind": "end", "events": 0, "blobs": 0, "keys": 1}]) + "\n")
    imported = run("import", str(crafted))
    assert (EXIT_FINDINGS, True) == (verified.status, "'s1'" in verified.out)
    assert "Erasures: 1 erased key is held again" in verified.out
    assert EXIT_OK != imported.status
    assert "belongs to no event" in imported.err
    assert before == asyncio.run(_saved_keys(target, "s2"))


def test_an_erasure_recorded_before_through_erases_the_generations_it_counts() -> None:
    """An erasure event of a log written before events said ``through`` erased the
    generations it counts after those the previous one erased: erased (1), reopened (2),
    erased again (1 more) erases through 2; one with ``through`` says it outright."""
    def stored(version: int, event: SubjectKeyDestroyed) -> StoredEvent:
        tag, data = default_registry.encode(event)
        return StoredEvent(position=version, event_id=uuid.uuid4(), tenant_id="t",
                           stream_id="erasure:s1", version=version,
                           recorded_at=datetime.now(UTC), type=tag, data=data,
                           prev_hash=b"", hash=b"")

    old = [stored(1, SubjectKeyDestroyed(subject="s1", generations=1)),
           stored(2, SubjectKeyDestroyed(subject="s1", generations=1))]
    erasure = Erasure()
    seen = []
    for event in [*old, stored(3, SubjectKeyDestroyed(subject="s1", generations=1,
                                                      through=5))]:
        erasure = fold_erasure(erasure, event)
        seen.append((erasure.through, erasure.version))
    assert [(1, 1), (2, 2), (5, 3)] == seen


@signed_stores
async def test_a_forged_erasure_record_is_refused_not_obeyed(target: BackendTarget) -> None:
    """After an erasure and a reopening, the DBA appends a correctly chained erasure event
    the writer key did not sign: reads of the reopened subject raise `ForgedEvent` naming
    it (neither erased nor served as if nothing were wrong), and verify names it."""
    async with target.open() as log:
        await log.checkpoints.create(_record())
        await log.erase("t", "s1")
        await log.reopen_subject("t", "s1")
        created = await log.checkpoints.create(_record())
    await forge(target, "t", "erasure:s1", SubjectKeyDestroyed(subject="s1", generations=1,
                                                               through=2))
    async with target.open() as log:
        with pytest.raises(ForgedEvent, match="erasure:s1"):
            await log.checkpoints.read("t", "s1", created.checkpoint_id or "")
    assert [("erasure:s1", "unsigned", 2)] == await _findings(target)


@signed_stores
async def test_a_process_holding_the_key_refuses_it_once_restored_after_erasure(
        target: BackendTarget) -> None:
    """A process read the subject (its key cached); another erases it and the DBA writes
    the key row back at once, so the row looks as the first process cached it: at its
    next check (``key_cache_seconds=0``: before every use) the log's erasure record
    decides, and the read is refused."""
    async with target.open(key_cache_seconds=0) as reader:
        created = await reader.checkpoints.create(_record())
        saved = await _saved_keys(target, "s1")
        async with target.open() as other:
            await other.erase("t", "s1")
        await _write_back(target, "s1", saved)
        with pytest.raises(SubjectErased):
            await reader.checkpoints.read("t", "s1", created.checkpoint_id or "")


@signed_stores
def test_erase_of_a_subject_whose_erased_rows_were_deleted_says_erased_before(
        target: BackendTarget, capsys: pytest.CaptureFixture[str]) -> None:
    """The DBA deleted the erased key rows: ``eventlog erase`` again says the subject was
    erased before (the log's record), exit 0, rather than that it holds no key (exit 4)."""
    async def erased() -> None:
        async with target.open() as log:
            await log.checkpoints.create(_record())
            await log.erase("t", "s1")
        await rows(target, "DELETE FROM subject_keys WHERE tenant_id = $1 AND subject = $2",
                   "t", "s1")

    asyncio.run(erased())
    assert target.keyring is not None
    again = make_runner(capsys, target)("erase", "t", "s1", "--keyring", target.keyring,
                                        "--json")
    assert (EXIT_OK, {"destroyed": 0, "erased_before": True}) == (
        again.status, {key: value for key, value in json.loads(again.out).items()
                       if key in ("destroyed", "erased_before")}), again.err
