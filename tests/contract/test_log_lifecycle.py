"""An unknown commit outcome is resolved; open_log over an application's engine and the
default SQLite paths. (The closed-log contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from eventlog import CommitOutcomeUnknown, EventLog, open_log
from eventlog.storage.base import AppendRequest
from tests.conftest import BackendTarget
from tests.events import Noted


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
