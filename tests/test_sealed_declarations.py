"""Event types declare their sealed fields (issue 40 §4): an application's own event type
seals what it annotates `SEALED`, the stores' events declare theirs the same way (the
log keeps no table of other packages' field names), and a log sealed before the
declarations reads back exactly as it did."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest

from eventlog import Event, EventLog, EventRegistry, InvalidEvent, default_registry, open_log
from eventlog.events import SEALED
from eventlog.transfer import import_log
from tests.conftest import PG_URL, BackendTarget

FIXTURE = Path(__file__).parent / "fixtures" / "sealed_before_40"
MARKER = "MARKER-APP-NOTE"


class NoteAdded(Event, tag="app.note_added", frozen=True, kw_only=True):
    """An application's own event: its text and details sealed, its title not."""

    title: str
    text: Annotated[str, SEALED]
    details: Annotated[dict[str, Any] | None, SEALED] = None


REGISTRY = default_registry.copy()
REGISTRY.register(NoteAdded)


def _keyring(tmp_path: Path) -> Path:
    """The fixture's keyring, copied 0600 (a keyring readable by others is refused)."""
    copy = tmp_path / "kek.json"
    shutil.copyfile(FIXTURE / "kek.json", copy)
    copy.chmod(0o600)
    return copy


def _file_bytes(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in tmp_path.glob("log.db*"))


async def _stored_text(target: BackendTarget, tmp_path: Path) -> bytes:
    """Everything the backend stores: the SQLite file and its WAL, or every table of the
    PostgreSQL schema as text (bytea as hex, so look for the marker's hex too)."""
    if target.name == "sqlite":
        return _file_bytes(tmp_path)
    import asyncpg

    connection = await asyncpg.connect(PG_URL)
    try:
        tables = [row[0] for row in await connection.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
            target.schema)]
        text = "".join([str(row[0]) for table in tables for row in await connection.fetch(
            f'SELECT t::text FROM "{target.schema}"."{table}" t')])
    finally:
        await connection.close()
    return text.encode()


def _holds(stored: bytes, word: str) -> bool:
    """Whether ``word`` is in ``stored``, as text or as the hex of a bytea column."""
    return word.encode() in stored or word.encode().hex().encode() in stored


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_an_application_event_type_seals_the_fields_it_declares(
        target: BackendTarget, tmp_path: Path) -> None:
    """An app's event appended with ``subject=`` on an encrypted log: its SEALED fields
    are nowhere in storage (its other field is, in the clear), read back whole with the
    keyring, and as sealed markers without it."""
    from eventlog.crypto import init_keyring

    keyring = init_keyring(tmp_path / "keyring.json")
    note = NoteAdded(title="TITLE-IN-THE-CLEAR", text=MARKER, details={"why": MARKER})
    async with open_log(target.url, keyring=keyring, registry=REGISTRY,
                        **target.options()) as log:
        await log.append("acme", "notes:1", [note], subject="customer-7")
        read = [recorded.event async for recorded in log.read_stream("acme", "notes:1")]
    stored = await _stored_text(target, tmp_path)
    async with open_log(target.url, registry=REGISTRY, **target.options()) as log:
        keyless = [recorded.event async for recorded in log.read_stream("acme", "notes:1")]
    assert isinstance(keyless[0], NoteAdded)
    assert ([note], False, True, True) == (
        read, _holds(stored, MARKER), _holds(stored, "TITLE-IN-THE-CLEAR"),
        keyless[0].text.startswith("$sealed:") and "$sealed" in (keyless[0].details or {}))


def test_the_stores_events_declare_the_fields_the_log_sealed_before() -> None:
    """The stores' events declare, by annotation, exactly the paths the log's own table
    named before (the kinds their sealed bytes are bound to: stored forever)."""
    import projections  # noqa: F401  (registers every store's events)

    declared = {tag: default_registry.sealed_fields(tag) for tag in default_registry.tags
                if default_registry.sealed_fields(tag)}
    assert {
        "checkpoint_created": (("metadata",),),
        "thread_checkpoint_put": (("metadata",),),
        "interrupt.batch_created": (("interrupts", "*", "message"),
                                    ("interrupts", "*", "metadata")),
        "interrupt.batch_claimed": (("responses", "*", "payload"),
                                    ("responses", "*", "metadata")),
        "interrupt.capture_completed": (("snapshot",),),
        "interrupt.batch_reconciled": (("evidence",), ("note",)),
    } == declared


def test_a_sealed_field_that_cannot_hold_its_marker_is_refused() -> None:
    """A SEALED int (its marker would not decode as one), or SEALED inside a dict's values
    (which the log does not walk), is refused when the type is registered."""

    class Counted(Event, tag="app.counted", frozen=True):
        count: Annotated[int, SEALED]

    class Nested(Event, tag="app.nested", frozen=True):
        notes: dict[str, Annotated[str, SEALED]]

    for event_type, words in ((Counted, "Counted.count is annotated SEALED but is a int"),
                              (Nested, "inside a DictType")):
        with pytest.raises(InvalidEvent, match=words):
            EventRegistry([event_type])


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_log_sealed_before_the_declarations_reads_back_unchanged(
        target: BackendTarget, tmp_path: Path) -> None:
    """The fixture, an encrypted log written by the code that kept the table (every
    sealed field the stores have: metadata, messages, answers, snapshots, evidence,
    notes), imported as stored: every event reads back as that code read it, its stored
    bytes untouched, and verify holds."""
    export = (FIXTURE / "export.jsonl").read_bytes()
    expected = json.loads((FIXTURE / "opened.json").read_text())
    stored_data = {(line["stream"], line["version"]): line["data"]
                   for line in map(json.loads, export.splitlines()) if line.get("kind") == "event"}
    async with open_log(target.url, keyring=_keyring(tmp_path), **target.options()) as log:
        await import_log(log, io.BytesIO(export))
        assert await log.wait_readable()
        opened = await _opened(log)
        import base64

        data = {(event.stream_id, event.version): base64.b64encode(event.data).decode()
                for event in (await log.read_all(limit=1000, tenant_id="t")).events}
        assert (expected, stored_data, True) == (opened, data, (await log.verify()).ok)


async def _opened(log: EventLog) -> list[Any]:
    """Every event of tenant t, opened, as the fixture's ``opened.json`` holds them."""
    page = await log.read_all(limit=1000, tenant_id="t")
    return json.loads(json.dumps([
        [recorded.stream_id, recorded.version,
         msgspec.to_builtins(_every_field((await log.open_event(recorded)).event))]
        for recorded in page.events], sort_keys=True))


_STORED_FORM = frozenset({"versions_named", "version_list", "versions_at"})


def _every_field(value: Any) -> Any:
    """``value`` with each struct as a dict of every field, its defaults included: the
    thread events leave theirs out of their builtins since 0032 (`omit_defaults`), and the
    fixture wrote them all. ``versions_named``, ``version_list`` and ``versions_at`` (0032)
    are stored-form fields, empty in every event read back, that the fixture's code did
    not have."""
    if isinstance(value, msgspec.Struct):
        config = value.__struct_config__
        fields = {name: _every_field(getattr(value, name)) for name in value.__struct_fields__
                  if name not in _STORED_FORM}
        return fields if config.tag is None else {config.tag_field: config.tag, **fields}
    if isinstance(value, list):
        return [_every_field(item) for item in value]
    if isinstance(value, dict):
        return {key: _every_field(item) for key, item in value.items()}
    return value
