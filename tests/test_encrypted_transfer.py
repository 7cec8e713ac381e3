"""An encrypted log exported from one database and imported into another (issue 32 item
7): the file carries the ciphertext and each subject's data key wrapped under the
keyring's key-encryption key (never in the clear), and the erasures; the copy reads with
the keyring, verifies and refuses reads clearly without it, and an erased subject stays
erased."""

from __future__ import annotations

import base64
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.checkpoints import Payload
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.errors import ImportRefused, KeyringRequired, SubjectErased
from eventlog.log._sealing import context_of
from eventlog.testing.events import Noted
from eventlog.transfer import export_log, import_log
from tests.conftest import PG_URL

pytestmark = pytest.mark.postgres


def _record(session: str, **fields: Any) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.uuid4(),
                            **{"state": {"secret": "MARKER-STATE"},
                               "metadata": {"who": "MARKER-META"}, **fields})


@pytest.fixture
def keyring(tmp_path: Path) -> FileKeyring:
    return init_keyring(tmp_path / "keyring.json")


@pytest.fixture
def places(tmp_path: Path, migrated_pg_schema: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Where a log may live: an SQLite file, a PostgreSQL schema."""
    return {"sqlite": (f"sqlite:///{tmp_path / 'log.db'}", {}),
            "postgresql": (PG_URL, {"schema": migrated_pg_schema})}


def _opening(places: dict[str, tuple[str, dict[str, Any]]], name: str, **options: Any
             ) -> Any:
    url, place = places[name]
    return open_log(url, **place, **options)


async def _write(log: OpenLog) -> str:
    """s1 kept (a checkpoint and a thread), gone erased; the kept checkpoint's id."""
    created = await log.checkpoints.create(_record("s1"))
    await log.checkpoints.threads.put("t", "s1", "c1", state=Payload("json", b'"MARKER-T"'),
                                      channels={"ch": Payload("json", b'"MARKER-CHANNEL"')},
                                      metadata={"m": "MARKER-TMETA"})
    await log.checkpoints.create(_record("gone"))
    await log.erase("t", "gone", reason="asked", actor="dpo")
    return created.checkpoint_id or ""


async def _export(log: OpenLog) -> io.BytesIO:
    sink = io.BytesIO()
    await export_log(log, sink, tenant_id="t")
    sink.seek(0)
    return sink


@pytest.mark.parametrize(("source", "target"), [("sqlite", "postgresql"),
                                                ("postgresql", "sqlite")])
async def test_an_encrypted_log_moves_between_databases_with_its_wrapped_keys(
        places: dict[str, tuple[str, dict[str, Any]]], keyring: FileKeyring,
        source: str, target: str) -> None:
    """Exported (no keyring needed) and imported elsewhere: no marker and no data key in
    the clear in the file; without the keyring the copy verifies and refuses reads
    (`KeyringRequired`); with it, it reads, and the erased subject stays erased."""
    async with _opening(places, source, keyring=keyring) as log:
        checkpoint = await _write(log)
        raw = keyring.unwrap(next(row.wrapped for row in await log.storage.subject_keys(
            "t", "s1") if row.wrapped), context_of("t", "s1", 1))
    async with _opening(places, source) as log:
        file = await _export(log)
    text = file.getvalue()
    keys = [json.loads(line) for line in text.splitlines() if b'"kind":"key"' in line]
    async with _opening(places, target) as copy:
        await import_log(copy, file)
        with pytest.raises(KeyringRequired, match="keyring"):
            await copy.checkpoints.read("t", "s1", checkpoint)
        blind = ((await copy.verify()).ok, len(await copy.checkpoints.list("t", "s1")))
    async with _opening(places, target, keyring=keyring) as copy:
        read = await copy.checkpoints.read("t", "s1", checkpoint)
        thread = await copy.checkpoints.threads.get("t", "s1", "c1")
        with pytest.raises(SubjectErased):
            await copy.checkpoints.read("t", "gone", (await copy.checkpoints.list(
                "t", "gone"))[0].checkpoint_id or "")
        erased = [record.metadata for record in await copy.checkpoints.list("t", "gone")]
        verified = (await copy.verify()).ok
    assert thread is not None
    assert ((True, 1), False, False, False, {"secret": "MARKER-STATE"},
            b'"MARKER-CHANNEL"', [{"$erased": True}], True) == (
        blind, b"MARKER" in text, raw in text, base64.b64encode(raw) in text, read,
        thread.channels["ch"].data, erased, verified)
    assert {("s1", True), ("gone", False)} == {(key["subject"], key["wrapped"] is not None)
                                               for key in keys}


async def test_a_later_erasure_travels_to_an_earlier_copy(
        places: dict[str, tuple[str, dict[str, Any]]], keyring: FileKeyring) -> None:
    """A copy imported while s1 was live, then the source erases s1 and is exported
    again: importing that destroys the copy's key too (erased stays erased)."""
    async with _opening(places, "sqlite", keyring=keyring) as log:
        checkpoint = await _write(log)
        first = await _export(log)
        await log.erase("t", "s1", reason="later")
        second = await _export(log)
    async with _opening(places, "postgresql", keyring=keyring) as copy:
        await import_log(copy, first)
        before = await copy.checkpoints.read("t", "s1", checkpoint)
        await import_log(copy, second)
        with pytest.raises(SubjectErased):
            await copy.checkpoints.read("t", "s1", checkpoint)
        erasures = [e async for e in copy.read_stream("t", "erasure:s1")]
        assert ({"secret": "MARKER-STATE"}, 1, True) == (before, len(erasures),
                                                         (await copy.verify()).ok)


async def test_a_target_holding_another_key_for_the_subject_is_refused(
        places: dict[str, tuple[str, dict[str, Any]]], keyring: FileKeyring) -> None:
    """The target made its own data key for s1: the file's ciphertext would not open
    there, so the import is refused before anything is written."""
    async with _opening(places, "sqlite", keyring=keyring) as log:
        await _write(log)
        file = await _export(log)
    async with _opening(places, "postgresql", keyring=keyring) as copy:
        await copy.append("t", "elsewhere", [Noted(text="x")], attach=[b"own"], subject="s1")
        before = len((await copy.read_all()).events)
        with pytest.raises(ImportRefused, match="another data key"):
            await import_log(copy, file)
        assert before == len((await copy.read_all()).events)


async def test_a_session_export_carries_only_its_subjects_keys(
        places: dict[str, tuple[str, dict[str, Any]]], keyring: FileKeyring) -> None:
    """A session's export carries the keys its sealed bytes name, not the tenant's."""
    async with _opening(places, "sqlite", keyring=keyring) as log:
        checkpoint = await _write(log)
        sink = io.BytesIO()
        summary = await export_log(log, sink, tenant_id="t", session_id="s1")
    sink.seek(0)
    async with _opening(places, "postgresql", keyring=keyring) as copy:
        await import_log(copy, sink)
        assert (1, {"secret": "MARKER-STATE"}, [], True) == (
            summary.keys, await copy.checkpoints.read("t", "s1", checkpoint),
            await copy.storage.subject_keys("t", "gone"), (await copy.verify()).ok)
