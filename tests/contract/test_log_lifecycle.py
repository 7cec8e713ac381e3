"""Contract: a closed log refuses work, and an unknown commit outcome is resolved."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import (
    CheckpointRecord,
    CommitOutcomeUnknown,
    EventLog,
    Interrupt,
    Operation,
    Reconciliation,
    Resume,
    ResumeInput,
    StorageError,
    open_log,
)
from eventlog.storage.base import AppendRequest
from tests.conftest import BackendTarget
from tests.events import Noted


async def test_closed_log_refuses_every_call(target: BackendTarget) -> None:
    """After close, every entry point raises StorageError saying the log is closed."""
    async with open_log(target.url, **target.options()) as log:
        await log.append("t", "s", [Noted(text="a")])
    calls: list[Any] = [
        lambda: log.append("t", "s", [Noted(text="b")]),
        lambda: log.read_all(),
        lambda: log.verify(),
        lambda: log.get_blob("t", bytes(32)),
        lambda: anext(log.read_stream("t", "s")),
    ]
    for call in calls:
        with pytest.raises(StorageError, match="closed"):
            await call()


def lose_the_connection(log: EventLog, *, after_commit: bool) -> list[int]:
    """Make the next storage append raise CommitOutcomeUnknown, after or before committing.

    Returns a list that counts the storage appends attempted.
    """
    real = log.storage.append
    attempts: list[int] = []

    async def append(request: AppendRequest) -> list[int]:
        attempts.append(1)
        if len(attempts) > 1:
            return await real(request)
        if after_commit:
            await real(request)
        raise CommitOutcomeUnknown(log.storage.name, "append", "connection lost")

    log.storage.append = append  # type: ignore[method-assign]
    return attempts


async def test_commit_that_happened_is_found_not_repeated(log: EventLog) -> None:
    """The connection drops after the commit: the log finds its own event ids and returns
    the stored positions without appending again."""
    await log.append("t", "s", [Noted(text="a")])
    attempts = lose_the_connection(log, after_commit=True)
    result = await log.append("t", "s", [Noted(text="b"), Noted(text="c")], expected_version=1)
    stored = [event async for event in log.read_stream("t", "s")]
    assert (1, 3, [1, 2, 3]) == (len(attempts), result.version, [e.version for e in stored])
    assert list(result.positions) == [event.position for event in stored[1:]]
    assert list(result.event_ids) == [event.event_id for event in stored[1:]]


async def test_commit_that_did_not_happen_is_retried(log: EventLog) -> None:
    """The connection drops before the commit: the append is tried again and lands once."""
    attempts = lose_the_connection(log, after_commit=False)
    result = await log.append("t", "s", [Noted(text="a")], expected_version=0)
    stored = [event.event_id async for event in log.read_stream("t", "s")]
    assert (2, 1, list(result.event_ids)) == (len(attempts), result.version, stored)


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_log_over_an_application_engine_never_disposes_it(target: BackendTarget) -> None:
    """open_log(engine) uses the application's engine and leaves it usable after close."""
    if target.name == "sqlite":
        engine = create_async_engine(target.url.replace("sqlite://", "sqlite+aiosqlite://"))
        table = "events"
    else:
        engine = create_async_engine(target.url.replace("postgresql://", "postgresql+asyncpg://"))
        table = f'"{target.schema}".events'
    try:
        async with open_log(engine, **target.options()) as log:
            await log.append("t", "s", [Noted(text="a")])
            assert [1] == [event.version async for event in log.read_stream("t", "s")]
        async with engine.connect() as connection:
            count = (await connection.execute(text(f"SELECT count(*) FROM {table}"))).scalar()
        assert 1 == count
    finally:
        await engine.dispose()


async def test_relative_and_default_sqlite_paths_are_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlite:///name.db and no URL at all both mean a file in the working directory."""
    monkeypatch.chdir(tmp_path)
    async with open_log("sqlite:///relative.db") as log:
        await log.append("t", "s", [Noted(text="a")])
    async with open_log() as log:
        await log.append("t", "s", [Noted(text="b")])
    assert (True, True) == ((tmp_path / "eventlog.db").is_file(),
                            (tmp_path / "relative.db").is_file())


async def test_closed_log_stores_refuse_every_call(target: BackendTarget) -> None:
    """After close, the checkpoint, typed, interrupt and interrupt-admin stores refuse work
    (they read and write through the log, so none answers from a backend left behind)."""
    run = uuid.UUID("00000000-0000-4000-8000-000000000001")
    async with open_log(target.url, **target.options()) as log:
        created = await log.checkpoints.create(
            CheckpointRecord(tenant_id="t", session_id="s", run_id=run, state={"n": 1})
        )
    checkpoint_id = created.checkpoint_id
    assert checkpoint_id is not None
    typed = log.checkpoints.typed(dict)
    answer = ResumeInput(thread_id="s", batch_id="b", responses=[
        Resume(interrupt_id="i", status="resolved", payload={}),
    ])
    calls: list[Any] = [
        lambda: log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=run, state={"n": 2})),
        lambda: log.checkpoints.latest("t", "s"),
        lambda: log.checkpoints.list("t", "s"),
        lambda: log.checkpoints.list_by_run("t", run),
        lambda: log.checkpoints.read("t", "s", checkpoint_id),
        lambda: log.checkpoints.index("t", "s"),
        lambda: log.checkpoints.sessions("t"),
        lambda: log.checkpoints.runs("t", "s"),
        lambda: log.checkpoints.delete("t", "s"),
        lambda: typed.latest("t", "s"),
        lambda: typed.read("t", "s", checkpoint_id),
        lambda: log.interrupts.create(
            "t", "s", [Interrupt(id="i", reason="confirmation")], checkpoint_id,
            operation=Operation("payments", "1"),
        ),
        lambda: log.interrupts.try_claim("t", answer),
        lambda: log.interrupts.recover("t", "s"),
        lambda: log.interrupts.list(["t"]),
        lambda: log.interrupts.inspect(["t"], "b"),
        lambda: log.interrupts.reconcile(
            ["t"], "b", "operator", Reconciliation(resolution="abandoned", evidence={})
        ),
        lambda: log.interrupts.cleanup(),
    ]
    for call in calls:
        with pytest.raises(StorageError, match="closed"):
            await call()
