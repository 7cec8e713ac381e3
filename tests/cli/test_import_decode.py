"""``eventlog import`` checks that every event of the file decodes, as `import_log` does
from Python: the command reads logs leniently, but never imports an event it cannot read."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.hashing import recompute_hash
from eventlog.records import StoredEvent
from tests.cli.helpers import make_runner
from tests.cli.test_transfer import build
from tests.conftest import BackendTarget, fresh_id

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def rechain(lines: list[str], number: int, edit: Callable[[dict[str, Any]], None]) -> list[str]:
    """``lines`` with the event on line ``number`` (0-based) edited by ``edit`` and the
    hashes of its stream recomputed from there on, as a forger would."""
    records = [json.loads(line) for line in lines]
    tenant = records[0]["tenant"]
    edit(records[number])
    stream, previous = records[number]["stream"], None
    for record in records[number:]:
        if record.get("kind") != "event" or record["stream"] != stream:
            continue
        if previous is not None:
            record["prev_hash"] = previous
        record["hash"] = recompute_hash(StoredEvent(
            position=0, event_id=uuid.UUID(record["id"]), tenant_id=tenant, stream_id=stream,
            version=record["version"], type=record["type"], data=base64.b64decode(
                record["data"]), prev_hash=bytes.fromhex(record["prev_hash"]),
            hash=b"", recorded_at=_EPOCH + timedelta(microseconds=record["recorded_at"]),
        )).hex()
        previous = record["hash"]
    return [json.dumps(record) for record in records]


def exported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, list[str]]:
    """A tenant with two checkpoints of one session, exported; the file and its lines."""
    source = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}")
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("checkpoint", 0, 0, 1, 2)]))
    path = tmp_path / "t.jsonl"
    ran = make_runner(capsys, source)("export", "--tenant", tenant, str(path))
    assert EXIT_OK == ran.status, ran.err
    return path, path.read_text().splitlines()


def first_checkpoint(lines: list[str]) -> int:
    """The line (0-based) of the file's first ``checkpoint_created`` event."""
    return next(n for n, line in enumerate(lines) if '"checkpoint_created"' in line)


def cut_short(record: dict[str, Any]) -> None:
    """The event's bytes lose their second half."""
    data = base64.b64decode(record["data"])
    record["data"] = base64.b64encode(data[: len(data) // 2]).decode()


def unknown_and_not_json(record: dict[str, Any]) -> None:
    """A type the command does not know, with bytes that are not a JSON document."""
    record["type"] = "app.unknown_type"
    record["data"] = base64.b64encode(b"\x00not json").decode()


@pytest.mark.parametrize(("edit", "said"), [
    (cut_short, "'checkpoint_created'"), (unknown_and_not_json, "not a JSON object")])
def test_import_refuses_an_event_that_does_not_decode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
    edit: Callable[[dict[str, Any]], None], said: str,
) -> None:
    """An event of a known type that does not decode as it, or of an unknown type that is
    not a JSON object, in a file whose hashes were recomputed: exit 2 naming the line, and
    no database is created."""
    path, lines = exported(capsys, tmp_path)
    number = first_checkpoint(lines)
    path.write_text("\n".join(rechain(lines, number, edit)) + "\n")
    target = tmp_path / "copy.db"
    ran = make_runner(capsys, BackendTarget("sqlite", f"sqlite:///{target}"))("import", str(path))
    assert (EXIT_USAGE, False) == (ran.status, target.exists())
    assert f"cannot import {path}: line {number + 1}: " in ran.err
    assert said in ran.err


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
def test_a_refused_import_writes_nothing_to_postgresql(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: BackendTarget
) -> None:
    """The same refusal into PostgreSQL: exit 2, and the sound file imported afterwards
    finds nothing of it there (every event new)."""
    path, lines = exported(capsys, tmp_path)
    path.write_text("\n".join(rechain(lines, first_checkpoint(lines), cut_short)) + "\n")
    run = make_runner(capsys, target)
    refused = run("import", str(path))
    path.write_text("\n".join(lines) + "\n")
    sound = run("import", "--json", str(path))
    assert (EXIT_USAGE, EXIT_OK) == (refused.status, sound.status)
    assert (2, 0) == (sound.json()["events_imported"], sound.json()["events_present"])


def test_import_takes_a_well_formed_event_of_an_unknown_type(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An application's event type the command never registered imports as it is."""
    path, lines = exported(capsys, tmp_path)

    def renamed(record: dict[str, Any]) -> None:
        document = json.loads(base64.b64decode(record["data"]))
        document["type"] = "app.step_done"
        record["type"] = "app.step_done"
        record["data"] = base64.b64encode(json.dumps(document).encode()).decode()

    path.write_text("\n".join(rechain(lines, len(lines) - 2, renamed)) + "\n")
    copy = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}")
    ran = make_runner(capsys, copy)("import", "--json", str(path))
    assert (EXIT_OK, 2) == (ran.status, ran.json()["events_imported"]), ran.err
