"""Erasure that a file cannot fake (issue 40 §2): crafted import files, on a real SQLite
file and the PostgreSQL server. An import brings keys only for the subjects whose events
it brings, erases only with the signed erasure record it carries, never touches a key of
the target its events do not name, and a file missing a blob its header promises is
refused; each refusal writes nothing.
"""

from __future__ import annotations

import base64
import io
import json
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from eventlog import CheckpointRecord
from eventlog.crypto import FileKeyring
from eventlog.errors import ImportRefused, InvalidInput, SubjectErased
from eventlog.events import default_registry
from eventlog.events.erasure import SubjectKeyDestroyed
from eventlog.hashing import GENESIS_HASH, event_hash, to_micros
from eventlog.transfer import FORMAT, FORMAT_VERSION, export_log, import_log
from eventlog.writer_keys import WriterKeys
from tests.conftest import PG_URL, BackendTarget
from tests.signing_outside import rows

signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)


@pytest.fixture
def copy(target: BackendTarget, tmp_path: Path, request: pytest.FixtureRequest
         ) -> Iterator[BackendTarget]:
    """An empty log of the target's backend, under the same keyring."""
    if target.name == "sqlite":
        yield BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}",
                            keyring=target.keyring)
    else:
        schema = request.getfixturevalue("migrated_pg_schema")
        yield BackendTarget("postgresql", PG_URL, schema, keyring=target.keyring)


def _record(tenant: str, session: str = "s1") -> CheckpointRecord:
    return CheckpointRecord(tenant_id=tenant, session_id=session, run_id=uuid.UUID(int=1),
                            state={"secret": "MARKER-STATE"}, metadata={"who": "MARKER"})


async def _source(target: BackendTarget) -> tuple[str, list[dict[str, Any]]]:
    """Tenants t and u each with a checkpoint of subject s1; t's checkpoint id and t's
    export, as records."""
    async with target.open() as log:
        created = await log.checkpoints.create(_record("t"))
        await log.checkpoints.create(_record("u"))
        sink = io.BytesIO()
        await export_log(log, sink, tenant_id="t")
    return created.checkpoint_id or "", [json.loads(line)
                                         for line in sink.getvalue().splitlines()]


def _file(records: list[dict[str, Any]]) -> io.BytesIO:
    """The records as an export file, its end record counting what it holds."""
    body = [record for record in records if record.get("kind") != "end"]
    counts = {kind: sum(1 for record in body if record.get("kind") == kind)
              for kind in ("event", "blob", "key")}
    end = {"kind": "end", "events": counts["event"], "blobs": counts["blob"],
           "keys": counts["key"]}
    return io.BytesIO(b"".join(json.dumps(record).encode() + b"\n"
                               for record in [*body, end]))


def _key(records: list[dict[str, Any]], subject: str = "s1") -> dict[str, Any]:
    return next(record for record in records
                if record.get("kind") == "key" and record["subject"] == subject)


def _with_key(records: list[dict[str, Any]], **changed: Any) -> list[dict[str, Any]]:
    return [{**record, **changed} if record.get("kind") == "key" else record
            for record in records]


async def _state(target: BackendTarget) -> tuple[int, list[tuple[Any, ...]]]:
    """What an import could have written: the log's events, and its key rows."""
    events = await rows(target, "SELECT count(*) FROM events")
    keys = await rows(target, "SELECT tenant_id, subject, generation, wrapped IS NULL FROM "
                              "subject_keys ORDER BY tenant_id, subject, generation")
    return int(events[0][0]), keys


async def _refused(target: BackendTarget, file: io.BytesIO, error: type[Exception],
                   match: str) -> None:
    """The import of ``file`` into ``target`` is refused with ``error`` and writes nothing."""
    async with target.open() as log:
        before = await _state(target)
        with pytest.raises(error, match=match):
            await import_log(log, file)
    assert before == await _state(target)


@signed_stores
async def test_a_lone_erased_key_line_neither_erases_nor_is_imported(
        target: BackendTarget) -> None:
    """A header, one key line marked erased and an end record: refused; the target's
    key is intact, no erasure is recorded, and the subject still reads."""
    checkpoint, records = await _source(target)
    now = datetime.now(UTC).isoformat()
    file = _file([records[0], {**_key(records), "wrapped": None, "erased_at": now}])
    await _refused(target, file, InvalidInput, "belongs to no event")
    async with target.open() as log:
        assert {"secret": "MARKER-STATE"} == await log.checkpoints.read("t", "s1", checkpoint)
        assert [] == [e async for e in log.read_stream("t", "erasure:s1")]
        assert (await log.verify()).ok


@signed_stores
async def test_a_key_line_for_a_subject_the_file_does_not_bring_is_refused(
        target: BackendTarget, copy: BackendTarget) -> None:
    """The whole export with one more key line, of a subject no event names (junk): the
    copy gets nothing at all."""
    _, records = await _source(target)
    junk = {**_key(records), "subject": "s9",
            "wrapped": base64.b64encode(os.urandom(60)).decode()}
    await _refused(copy, _file([*records, junk]), InvalidInput, "s9.*belongs to no event")


@signed_stores
@pytest.mark.parametrize("forged", ["junk", "another tenant's key"])
async def test_a_junk_or_another_tenants_key_is_refused(
        target: BackendTarget, copy: BackendTarget, forged: str) -> None:
    """The subject's key line holding junk bytes, or tenant u's key of the same subject
    (read with SQL): it does not unwrap as t's key, so nothing is imported (before, every
    later read and write of the subject in the copy failed)."""
    _, records = await _source(target)
    if forged == "junk":
        wrapped = os.urandom(len(base64.b64decode(_key(records)["wrapped"])))
    else:
        found = await rows(target, "SELECT wrapped FROM subject_keys WHERE tenant_id = $1 "
                                   "AND subject = $2", "u", "s1")
        wrapped = bytes(found[0][0])
    file = _file(_with_key(records, wrapped=base64.b64encode(wrapped).decode()))
    await _refused(copy, file, InvalidInput, "does not unwrap")


@signed_stores
async def test_an_erased_marker_without_its_erasure_record_is_refused(
        target: BackendTarget, copy: BackendTarget) -> None:
    """The export with the subject's key line marked erased, and no erasure event: refused
    (before, the copy's subject was dead for good, with no record of why)."""
    _, records = await _source(target)
    file = _file(_with_key(records, wrapped=None,
                           erased_at=datetime.now(UTC).isoformat()))
    await _refused(copy, file, InvalidInput, "no erasure event")


def _erasure_event(subject: str) -> dict[str, Any]:
    """An unsigned erasure record, correctly chained (anyone can compute the chain)."""
    tag, data = default_registry.encode(SubjectKeyDestroyed(subject=subject, generations=1))
    event_id, at, stream = uuid.uuid4(), datetime.now(UTC), f"erasure:{subject}"
    digest = event_hash(tenant_id="t", stream_id=stream, version=1, event_id=event_id,
                        type=tag, recorded_at=at, data=data, prev_hash=GENESIS_HASH)
    return {"kind": "event", "stream": stream, "version": 1, "id": str(event_id),
            "type": tag, "recorded_at": to_micros(at), "data": base64.b64encode(data).decode(),
            "prev_hash": GENESIS_HASH.hex(), "hash": digest.hex(), "position": 1}


@signed_stores
async def test_an_unsigned_erasure_record_does_not_erase_a_signed_log(
        target: BackendTarget) -> None:
    """A file carrying a correctly chained but unsigned erasure event and the key line
    marked erased: the target's events are signed, so it is refused and the key stays."""
    checkpoint, records = await _source(target)
    header = {"format": FORMAT, "version": FORMAT_VERSION, "tenant": "t", "session": None,
              "with_state": True, "exported_at": datetime.now(UTC).isoformat(),
              "source": "sqlite"}
    now = datetime.now(UTC).isoformat()
    file = _file([header, _erasure_event("s1"),
                  {**_key(records), "wrapped": None, "erased_at": now}])
    await _refused(target, file, ImportRefused, "not signed")
    async with target.open() as log:
        assert {"secret": "MARKER-STATE"} == await log.checkpoints.read("t", "s1", checkpoint)


@signed_stores
async def test_a_file_missing_a_blob_its_header_promises_is_refused(
        target: BackendTarget, copy: BackendTarget) -> None:
    """An export with state whose blob record was cut out (its end record fixed): refused
    (before: imported, and then verify said blob_missing)."""
    _, records = await _source(target)
    cut = [record for record in records if record.get("kind") != "blob"]
    assert len(cut) < len(records)
    await _refused(copy, _file(cut), InvalidInput, "lacks 1 blob")


@signed_stores
async def test_the_unaltered_export_still_imports(
        target: BackendTarget, copy: BackendTarget) -> None:
    """The same export, unaltered, imports and reads (the refusals above are the
    alterations')."""
    checkpoint, records = await _source(target)
    async with copy.open() as log:
        await import_log(log, _file(records))
        assert {"secret": "MARKER-STATE"} == await log.checkpoints.read("t", "s1", checkpoint)
        assert (await log.verify()).ok


@signed_stores
async def test_a_session_export_carries_its_subjects_erasures(
        target: BackendTarget, copy: BackendTarget) -> None:
    """One session's export, its subject erased at the source: it carries the erasure
    record with the erased key line, so a copy holding the subject's key (imported
    before the erasure) destroys it, and a fresh copy imports it erased."""
    checkpoint, _ = await _source(target)
    async with target.open() as log:
        before = io.BytesIO()
        await export_log(log, before, tenant_id="t", session_id="s1")
        await log.erase("t", "s1")
        after = io.BytesIO()
        await export_log(log, after, tenant_id="t", session_id="s1")
    async with copy.open() as log:
        before.seek(0)
        await import_log(log, before)
        assert {"secret": "MARKER-STATE"} == await log.checkpoints.read("t", "s1", checkpoint)
        after.seek(0)
        await import_log(log, after)
        with pytest.raises(SubjectErased):
            await log.checkpoints.read("t", "s1", checkpoint)
        assert (await log.verify()).ok
    assert [("t", "s1", 1, 1)] == (await _state(copy))[1]


@signed_stores
async def test_an_erasure_record_whose_signature_cannot_be_checked_does_not_erase(
        target: BackendTarget) -> None:
    """The erasure event carries a made-up signature under the real writer key's id, and
    the log is opened without its keyring (no writer key to check it): the import would
    destroy a key the log holds on an unchecked record, so it is refused."""
    checkpoint, records = await _source(target)
    assert target.keyring is not None
    key_id = WriterKeys(FileKeyring(target.keyring).writer_public_keys).ids[0]
    header = {"format": FORMAT, "version": FORMAT_VERSION, "tenant": "t", "session": None,
              "with_state": True, "exported_at": datetime.now(UTC).isoformat(),
              "source": "sqlite"}
    now = datetime.now(UTC).isoformat()
    forged = {**_erasure_event("s1"), "signature": key_id + os.urandom(64).hex()}
    file = _file([header, forged, {**_key(records), "wrapped": None, "erased_at": now}])
    keyless = BackendTarget(target.name, target.url, target.schema)
    await _refused(keyless, file, ImportRefused, "cannot be checked")
    async with target.open() as log:
        assert {"secret": "MARKER-STATE"} == await log.checkpoints.read("t", "s1", checkpoint)
