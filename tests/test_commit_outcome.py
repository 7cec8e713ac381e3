"""An append whose commit outcome was lost, and whose first probe ran before the commit
became visible (as with an in-flight PostgreSQL commit), is reported once, correctly."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from eventlog.errors import CommitOutcomeUnknown, StorageError
from eventlog.records import StoredEvent
from eventlog.storage.base import AppendRequest, StorageBackend
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import SqliteBackend
from projections import INLINE_PROJECTIONS
from tests.conftest import PG_URL
from tests.events import Noted


def lost_commit(base: type[Any]) -> type[Any]:
    """``base`` whose next append commits but reports a lost connection, and whose next
    outcome probe does not see the commit yet."""

    class LostCommit(base):  # type: ignore[misc,valid-type]
        lose_next = False
        hide_next = False

        async def append(self, request: AppendRequest) -> list[int]:
            positions: list[int] = await super().append(request)
            if self.lose_next:
                self.lose_next, self.hide_next = False, True
                raise CommitOutcomeUnknown(self.name, "append", "connection lost")
            return positions

        async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
            if self.hide_next:
                self.hide_next = False
                return None
            found: StoredEvent | None = await super().find_event(tenant_id, event_id)
            return found

    return LostCommit


@pytest.fixture(params=["sqlite", "postgresql"])
async def flaky(request: pytest.FixtureRequest, tmp_path: Path, pg_schema_or_none: str | None):
    """A log over a backend that loses one commit acknowledgement on demand."""
    storage: StorageBackend
    if request.param == "sqlite":
        storage = lost_commit(SqliteBackend)(str(tmp_path / "log.db"))
    else:
        storage = lost_commit(PostgresBackend)(PG_URL, schema=pg_schema_or_none)
    await storage.open(upgrade=True)
    log = EventLog(storage, projections=INLINE_PROJECTIONS)
    yield log
    await log.close()


@pytest.fixture
def pg_schema_or_none(request: pytest.FixtureRequest) -> str | None:
    """A fresh PostgreSQL schema for the postgresql parameter, else None."""
    if "postgresql" not in request.node.name:
        return None
    return str(request.getfixturevalue("pg_schema"))


async def test_a_lost_commit_leaves_no_gap_in_the_chain(flaky: EventLog) -> None:
    """The next append after a resolved lost commit continues the chain without a hole."""
    await flaky.append("t", "s", [Noted(text="one")])
    flaky.storage.lose_next = True  # type: ignore[attr-defined]
    second = await flaky.append("t", "s", [Noted(text="two")])
    third = await flaky.append("t", "s", [Noted(text="three")])
    versions = [event.version async for event in flaky.read_stream("t", "s")]
    assert ([1, 2, 3], 2, 3) == (versions, second.version, third.version)
    assert (await flaky.verify()).ok


async def test_a_lost_commit_with_an_exact_version_is_not_a_conflict(flaky: EventLog) -> None:
    """An append at an exact version whose commit was lost reports success, once."""
    await flaky.append("t", "s", [Noted(text="one")])
    flaky.storage.lose_next = True  # type: ignore[attr-defined]
    result = await flaky.append("t", "s", [Noted(text="two")], expected_version=1)
    texts = [event.event.text async for event in flaky.read_stream("t", "s")]  # type: ignore[attr-defined]
    assert (2, ["one", "two"]) == (result.version, texts)


async def test_a_lost_commit_whose_lookup_fails_too_is_an_unknown_outcome(
    flaky: EventLog, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commit is lost and every lookup of its outcome fails: the caller hears
    CommitOutcomeUnknown (with the lookup's failure as cause), never a plain read error,
    and the append, which did commit, is there once when the storage answers again."""
    await flaky.append("t", "s", [Noted(text="one")])
    flaky.storage.lose_next = True  # type: ignore[attr-defined]

    async def unreachable(*_: object, **__: object) -> None:
        raise StorageError(flaky.storage.name, "read", "read failed")

    with monkeypatch.context() as patched:
        patched.setattr(flaky.storage, "find_event", unreachable)
        patched.setattr(flaky.storage, "stream_head", unreachable)
        with pytest.raises(CommitOutcomeUnknown) as raised:
            await flaky.append("t", "s", [Noted(text="two")], expected_version=1)
    assert isinstance(raised.value.__cause__, StorageError)
    texts = [event.event.text async for event in flaky.read_stream("t", "s")]  # type: ignore[attr-defined]
    assert ["one", "two"] == texts
