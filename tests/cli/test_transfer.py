"""``eventlog export`` / ``eventlog import``: exact copies whose chains verify, never doubled."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog, open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.interrupts import Finish, Interrupt, Operation, Resume, ResumeInput
from eventlog.records import RecordedEvent
from eventlog.transfer import export_log, import_log
from projections.query import ViewQuery
from projections.views import key_columns
from tests.cli.helpers import Run, Story, TickingClock, make_runner, seed
from tests.conftest import BackendTarget, fresh_id, require_postgres
from tests.events import Noted
from tests.procs.settle import settle

STATES: list[Any] = [{"a": 1}, {"a": 1}, b"\x00\x01raw", [1, 2, 3], "text",
                     {"nested": {"x": [True, None]}}]
OPERATION = Operation("op", "1")

operations = st.lists(
    st.one_of(
        st.tuples(st.just("checkpoint"), st.integers(0, 2), st.integers(0, 2),
                  st.integers(0, 4), st.integers(0, len(STATES) - 1)),
        st.tuples(st.just("delete"), st.integers(0, 2)),
        st.tuples(st.just("note"), st.integers(0, 1), st.text(max_size=5)),
        st.tuples(st.just("batch"), st.integers(0, 2), st.integers(0, 3)),
    ),
    min_size=1, max_size=8,
)
"""Histories: checkpoints (same ids and states recur), deletes, other events, batches
taken 0 to 3 steps through claim, effect and finish."""


async def build(target: BackendTarget, tenant: str, ops: list[tuple[Any, ...]]) -> None:
    """Play ``ops`` into ``tenant`` of ``target``'s log."""
    runs = [uuid.uuid4() for _ in range(3)]
    async with open_log(target.url, clock=TickingClock(), **target.options()) as log:
        for op in ops:
            await _play(log, tenant, runs, op)
        await settle(log)


async def _play(log: EventLog, tenant: str, runs: list[uuid.UUID], op: tuple[Any, ...]) -> None:
    kind, session = op[0], f"s{op[1]}"
    if kind == "checkpoint":
        await log.checkpoints.create(CheckpointRecord(
            tenant_id=tenant, session_id=session, run_id=runs[op[2]],
            checkpoint_id=f"c{op[3]}", step=op[3], state=STATES[op[4]]))
    elif kind == "delete":
        await log.checkpoints.delete(tenant, session)
    elif kind == "note":
        await log.append(tenant, f"notes-{op[1]}", [Noted(text=op[2])])
    else:
        await _batch(log, tenant, session, op[2])


async def _batch(log: EventLog, tenant: str, session: str, steps: int) -> None:
    batch = await log.interrupts.create(tenant, session, [Interrupt(id="q", reason="ask")],
                                        "c0", operation=OPERATION)
    if steps == 0:
        return
    claim = (await log.interrupts.try_claim(tenant, ResumeInput(
        thread_id=session, batch_id=batch.batch_id,
        responses=[Resume(interrupt_id="q", status="resolved", payload=1)]))).claim
    assert claim is not None
    if steps >= 2:
        assert await log.interrupts.try_start_effect(claim)
    if steps >= 3:
        assert await log.interrupts.finish(claim, Finish.FINALIZE)


async def snapshot(target: BackendTarget, tenant: str) -> dict[str, Any]:
    """`log_snapshot` of a log opened for the purpose."""
    async with open_log(target.url, upgrade=False, **target.options()) as log:
        await settle(log)
        return await log_snapshot(log, tenant)


async def log_snapshot(log: EventLog, tenant: str) -> dict[str, Any]:
    """A tenant's stored events (exactly as stored, positions aside), its blobs with their
    reference counts, and its view rows with positions left out."""
    events: list[RecordedEvent] = []
    cursor: str | None = None
    while page := await log.read_all(after=cursor, limit=1000, tenant_id=tenant):
        if not page.events:
            break
        events.extend(page.events)
        cursor = page.cursor
    refs = dict(await log.storage.blob_refs(tenant))
    views = {}
    for name, key in key_columns().items():
        rows = await log.storage.query(ViewQuery(name, {"tenant_id": tenant}, order_by=key))
        views[name] = [{k: v for k, v in row.items() if "position" not in k} for row in rows]
    return {
        "events": [(e.event_id, e.stream_id, e.version, e.recorded_at, e.type, e.data,
                    e.prev_hash, e.hash) for e in events],
        "refs": refs,
        "blobs": {digest: await log.get_blob(tenant, digest) for digest in refs},
        "views": views,
    }


@pytest.fixture
def sqlite_pair(tmp_path: Path) -> tuple[BackendTarget, BackendTarget]:
    """Two SQLite files: a source and a copy."""
    return (BackendTarget("sqlite", f"sqlite:///{tmp_path / 'source.db'}"),
            BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}"))


def transfer(capsys: pytest.CaptureFixture[str], source: BackendTarget, copy: BackendTarget,
             tenant: str, path: Path, *export_args: str) -> dict[str, Any]:
    """Export ``tenant`` from ``source`` to ``path``, import it into ``copy``; the import's
    JSON summary."""
    exported = make_runner(capsys, source)("export", "--tenant", tenant, *export_args,
                                           str(path))
    assert EXIT_OK == exported.status, exported.err
    imported = make_runner(capsys, copy)("import", "--json", str(path))
    assert EXIT_OK == imported.status, imported.err
    summary: dict[str, Any] = imported.json()
    return summary


@pytest.fixture
def open_pair(tmp_path: Path) -> Iterator[tuple[asyncio.Runner, EventLog, EventLog]]:
    """A source and a copy SQLite log, open for a whole property run, on one runner.

    The files go to a memory file system when there is one: each commit's fsync would
    otherwise dominate the run, and durability is not what this property is about.
    """
    shm = Path("/dev/shm")
    if shm.is_dir():
        tmp_path = Path(tempfile.mkdtemp(dir=shm, prefix="eventlog-test-"))
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        source = runner.run(stack.enter_async_context(
            open_log(f"sqlite:///{tmp_path / 'source.db'}", clock=TickingClock())))
        copy = runner.run(stack.enter_async_context(
            open_log(f"sqlite:///{tmp_path / 'copy.db'}")))
        yield runner, source, copy
        runner.run(stack.aclose())
    if tmp_path.parent == shm:
        shutil.rmtree(tmp_path)


@given(ops=operations)
def test_round_trip_is_exact_and_verifies(
    open_pair: tuple[asyncio.Runner, EventLog, EventLog], ops: list[tuple[Any, ...]]
) -> None:
    """Any history: the copy holds byte-identical events, the same blobs and reference
    counts and the same views (positions aside), its chains verify, and importing the
    same file again writes nothing. (The library calls the command makes, on open logs:
    the command itself is exercised by the examples below.)"""
    runner, source, copy = open_pair
    tenant = fresh_id("t")
    runs = [uuid.uuid4() for _ in range(3)]
    for op in [("note", 0, "first"), *ops]:  # never an empty tenant
        runner.run(_play(source, tenant, runs, op))
    exported = io.BytesIO()
    runner.run(export_log(source, exported, tenant_id=tenant))
    exported.seek(0)
    summary = runner.run(import_log(copy, exported))
    original = runner.run(log_snapshot(source, tenant))
    assert original == runner.run(log_snapshot(copy, tenant))
    assert len(original["events"]) == summary.events_imported
    assert [] == runner.run(copy.verify(tenant)).problems
    exported.seek(0)
    again = runner.run(import_log(copy, exported))
    assert (0, len(original["events"])) == (again.events_imported, again.events_present)
    assert original == runner.run(log_snapshot(copy, tenant))


@pytest.mark.parametrize("direction", ["postgresql→sqlite", "sqlite→postgresql"])
def test_round_trip_between_postgresql_and_sqlite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pg_schema: str, direction: str
) -> None:
    """A story moved from PostgreSQL into a local SQLite file (and back the other way)
    arrives exact, and its chains verify there."""
    require_postgres()
    from tests.conftest import PG_URL

    postgres = BackendTarget("postgresql", PG_URL, pg_schema)
    sqlite = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'local.db'}")
    source, copy = (postgres, sqlite) if direction.startswith("postgresql") else (sqlite,
                                                                                  postgres)
    story = asyncio.run(seed(source))
    transfer(capsys, source, copy, story.tenant, tmp_path / "story.jsonl")
    assert asyncio.run(snapshot(source, story.tenant)) == asyncio.run(
        snapshot(copy, story.tenant))
    assert EXIT_OK == make_runner(capsys, copy)("verify").status


def test_a_later_export_extends_the_copy(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """Import, write more in the source, export again, import: only the new events are
    appended, onto the same chains."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("note", 0, "a")]))
    transfer(capsys, source, copy, tenant, tmp_path / "first.jsonl")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 1, 1, 2), ("note", 1, "b")]))
    summary = transfer(capsys, source, copy, tenant, tmp_path / "second.jsonl")
    assert (2, 2) == (summary["events_imported"], summary["events_present"])
    assert asyncio.run(snapshot(source, tenant)) == asyncio.run(snapshot(copy, tenant))


def test_an_older_export_into_a_newer_copy_changes_nothing(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """The copy already went further than the file: every event of the file is present,
    nothing is appended."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("note", 0, "a"), ("checkpoint", 0, 0, 0, 0)]))
    old = tmp_path / "old.jsonl"
    assert EXIT_OK == make_runner(capsys, source)("export", "--tenant", tenant,
                                                  str(old)).status
    asyncio.run(build(source, tenant, [("note", 0, "b"), ("checkpoint", 0, 0, 1, 1)]))
    transfer(capsys, source, copy, tenant, tmp_path / "new.jsonl")
    again = make_runner(capsys, copy)("import", "--json", str(old))
    assert (EXIT_OK, 0, 2) == (again.status, again.json()["events_imported"],
                               again.json()["events_present"])
    assert asyncio.run(snapshot(source, tenant)) == asyncio.run(snapshot(copy, tenant))


def test_a_conflicting_history_is_refused_and_nothing_written(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """The target already has a different history in one of the file's streams: exit 1
    naming the stream, and not one event is imported (not even of other streams)."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("note", 1, "x"), ("checkpoint", 0, 0, 0, 0)]))
    asyncio.run(build(copy, tenant, [("checkpoint", 0, 1, 3, 1)]))
    before = asyncio.run(snapshot(copy, tenant))
    path = tmp_path / "t.jsonl"
    assert EXIT_OK == make_runner(capsys, source)("export", "--tenant", tenant,
                                                  str(path)).status
    ran = make_runner(capsys, copy)("import", str(path))
    assert EXIT_FINDINGS == ran.status
    assert f"import of {path} refused: stream 'session:s0' at version 1" in ran.err
    assert before == asyncio.run(snapshot(copy, tenant))


@pytest.mark.parametrize("damage", ["truncated", "altered", "not an export"])
def test_a_damaged_file_is_refused_and_nothing_written(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path, damage: str,
) -> None:
    """A file cut short, one changed event byte, or a foreign file: exit 2, one line,
    nothing imported."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("note", 0, "one"), ("note", 0, "two")]))
    path = tmp_path / "t.jsonl"
    assert EXIT_OK == make_runner(capsys, source)("export", "--tenant", tenant,
                                                  str(path)).status
    lines = path.read_text().splitlines()
    if damage == "truncated":
        lines = lines[:-1]
    elif damage == "altered":
        event = json.loads(lines[-2])
        event["data"] = base64.b64encode(
            base64.b64decode(event["data"]).replace(b"two", b"tw0")).decode()
        lines[-2] = json.dumps(event)
    else:
        lines[0] = json.dumps({"format": "something-else"})
    path.write_text("\n".join(lines) + "\n")
    ran = make_runner(capsys, copy)("import", str(path))
    expected = {"truncated": "truncated", "altered": "altered",
                "not an export": "is not a checkpoint-eventlog/export file"}[damage]
    assert (EXIT_USAGE, True) == (ran.status, expected in ran.err), ran.err
    assert f"cannot import {path}: " in ran.err
    assert not Path(copy.url.removeprefix("sqlite:///")).exists()  # not even created


def test_a_refused_file_creates_no_database(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """Importing a damaged file into a database that does not exist yet: exit 2 naming
    the file, and no database is created."""
    source, _copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("note", 0, "one")]))
    path = tmp_path / "t.jsonl"
    assert EXIT_OK == make_runner(capsys, source)("export", "--tenant", tenant,
                                                  str(path)).status
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    target = tmp_path / "never.db"
    ran = make_runner(capsys, BackendTarget("sqlite", f"sqlite:///{target}"))("import", str(path))
    assert (EXIT_USAGE, False) == (ran.status, target.exists())
    assert f"cannot import {path}: has no end record: it is truncated" in ran.err


def test_a_session_export_carries_that_session_only(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """--session: the session's stream, its batches' streams and the state its live
    checkpoints need, with their counts; nothing of the tenant's other sessions."""
    source, copy = sqlite_pair
    story: Story = asyncio.run(seed(source))
    asyncio.run(build(source, story.tenant, [("checkpoint", 0, 0, 0, 1), ("note", 0, "n")]))
    transfer(capsys, source, copy, story.tenant, tmp_path / "s.jsonl",
             "--session", story.session)
    copied = asyncio.run(snapshot(copy, story.tenant))
    assert {f"session:{story.session}", f"interrupt-batch:{story.batch_id}"} == {
        event[1] for event in copied["events"]}
    assert [{"step": n} for n in range(4)] == sorted(
        (json.loads(blob) for blob in copied["blobs"].values()), key=lambda s: s["step"])
    assert {2} == {refs for digest, refs in copied["refs"].items()
                   if json.loads(copied["blobs"][digest]) == {"step": 2}}
    verified = make_runner(capsys, copy)("verify", "--json")
    assert (EXIT_OK, True) == (verified.status, verified.json()["ok"])


def test_without_state_leaves_the_blobs_behind(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """--without-state: the same events, no blob in the file or the copy, and one
    state_withheld event (on an import stream of its own) naming the blobs left out."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("checkpoint", 1, 0, 1, 2)]))
    path = tmp_path / "t.jsonl"
    transfer(capsys, source, copy, tenant, path, "--without-state")
    assert not any('"kind":"blob"' in line for line in path.read_text().splitlines())
    original, copied = asyncio.run(snapshot(source, tenant)), asyncio.run(snapshot(copy, tenant))
    imported = [event for event in copied["events"] if not event[1].startswith("import:")]
    withheld = [json.loads(event[5])["digests"] for event in copied["events"]
                if event[4] == "state_withheld"]
    assert (original["events"], {}) == (imported, copied["refs"])
    assert [sorted(digest.hex() for digest in original["refs"])] == withheld


def test_export_refuses_to_overwrite(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """An existing FILE is kept unless --force."""
    source, _copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("note", 0, "x")]))
    path = tmp_path / "t.jsonl"
    path.write_text("keep me")
    run: Run = make_runner(capsys, source)
    ran = run("export", "--tenant", tenant, str(path))
    assert (EXIT_USAGE, "keep me") == (ran.status, path.read_text())
    assert EXIT_OK == run("export", "--tenant", tenant, "--force", str(path)).status
    assert path.read_text().startswith('{"format":"checkpoint-eventlog/export"')


def test_export_to_standard_output_imports_the_same(
    sqlite_pair: tuple[BackendTarget, BackendTarget], tmp_path: Path
) -> None:
    """`eventlog export … -` writes the file to standard output (the summary goes to
    standard error), and that output imports like a file; the command's own process
    never registered the test's event type, yet exports, imports and shows it."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("note", 0, "x")]))
    eventlog = Path(sys.executable).with_name("eventlog")
    exported = subprocess.run(
        [str(eventlog), "export", "--tenant", tenant, "-", "--url", source.url],
        capture_output=True, check=False)
    assert EXIT_OK == exported.returncode, exported.stderr
    assert b"Exported to" in exported.stderr
    path = tmp_path / "piped.jsonl"
    path.write_bytes(exported.stdout)
    imported = subprocess.run([str(eventlog), "import", str(path), "--url", copy.url],
                              capture_output=True, check=False)
    assert EXIT_OK == imported.returncode
    assert asyncio.run(snapshot(source, tenant)) == asyncio.run(snapshot(copy, tenant))
    shown = subprocess.run([str(eventlog), "log", "--json", "--type", "test.noted", "--url",
                            copy.url], capture_output=True, text=True, check=False)
    assert {"text": "x", "number": 0} == json.loads(shown.stdout)["data"]


async def test_export_places_declared_blobs_and_stamps_the_injected_clock() -> None:
    """The header's time comes from the log's clock; a blob travels right before the event
    that declares it (`blob_digests`), and a claim's token digest is never taken for one."""
    moment = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    async with open_log("memory://", clock=lambda: moment) as log:
        created = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"n": 1}))
        assert created.checkpoint_id is not None
        batch = await log.interrupts.create(
            "t", "s", [Interrupt(id="i", reason="confirmation")], created.checkpoint_id,
            operation=OPERATION)
        await log.interrupts.try_claim("t", ResumeInput(
            thread_id="s", batch_id=batch.batch_id,
            responses=[Resume(interrupt_id="i", status="resolved", payload={})]))
        sink = io.BytesIO()
        await export_log(log, sink, tenant_id="t")
    records = [json.loads(line) for line in sink.getvalue().splitlines()]
    kinds = [record.get("kind", "header") for record in records]
    assert moment.isoformat() == records[0]["exported_at"]
    assert ["header", "blob", "event", "event", "event", "end"] == kinds
    assert "checkpoint_created" == records[2]["type"]


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_export_and_import_count_the_same_blobs(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path, target: BackendTarget,
) -> None:
    """Sessions sharing one state, written in turns (so the import commits them in several
    batches): the import (into SQLite or PostgreSQL) counts each blob of the file once,
    as the export did."""
    source, copy = sqlite_pair[0], target
    tenant = fresh_id("t")
    asyncio.run(build(source, tenant, [("checkpoint", 0, 0, 0, 0), ("checkpoint", 1, 0, 0, 0),
                                       ("checkpoint", 0, 0, 1, 0), ("checkpoint", 1, 0, 1, 2)]))
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--tenant", tenant, str(path))
    imported = make_runner(capsys, copy)("import", "--json", str(path))
    assert (2, 2) == (exported.json()["blobs"], imported.json()["blobs_imported"])


def test_a_blob_no_event_names_arrives_and_is_counted(
    capsys: pytest.CaptureFixture[str], sqlite_pair: tuple[BackendTarget, BackendTarget],
    tmp_path: Path,
) -> None:
    """A blob an application attached to its own event type (no event names its digest)
    travels at the end of the file: the import stores it with its count, and both sides
    count it."""
    source, copy = sqlite_pair
    tenant = fresh_id("t")

    async def attach() -> None:
        async with open_log(source.url) as log:
            await log.append(tenant, "notes", [Noted(text="with a blob")], attach=[b"opaque"])

    asyncio.run(attach())
    path = tmp_path / "t.jsonl"
    exported = make_runner(capsys, source)("export", "--json", "--tenant", tenant, str(path))
    imported = make_runner(capsys, copy)("import", "--json", str(path))
    assert (1, 1) == (exported.json()["blobs"], imported.json()["blobs_imported"])
    assert asyncio.run(snapshot(source, tenant)) == asyncio.run(snapshot(copy, tenant))
