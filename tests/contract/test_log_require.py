"""Contract: an append's requirements (``require=``, `RowRequired`), checked by the backend
in the append's own transaction, and a PostgreSQL create with a parent in one round trip
(issue 30 §3)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from eventlog import CheckpointRecord, EventLog, InvalidInput, open_log
from eventlog.log._append import Draft, prepare
from eventlog.testing.events import Noted
from projections import INLINE_PROJECTIONS
from projections.checkpoints import CHECKPOINTS
from projections.query import RowRequired, ViewQuery
from projections.views import STREAM_HEADS
from tests.conftest import CITUS, PGBOUNCER, BackendTarget

RUN = uuid.uuid4()
DRIVER_CALLS = ("fetch", "fetchval", "fetchrow", "execute", "executemany")


def parent_row(tenant: str, checkpoint_id: str) -> RowRequired:
    """The requirement a create with a parent makes: a checkpoint row of session ``s``."""
    return RowRequired(CHECKPOINTS, {"tenant_id": tenant, "session_id": "s",
                                     "checkpoint_id": checkpoint_id},
                       field="parent_id", reason="names no such row")


async def head(log: EventLog, tenant: str, stream: str) -> list[dict[str, Any]]:
    """The stream's head row (none when nothing was appended to it)."""
    return await log.query(ViewQuery(STREAM_HEADS, {"tenant_id": tenant, "stream_id": stream}))


async def test_an_append_whose_required_row_exists_is_written(log: EventLog) -> None:
    """A required row that is there lets the append through."""
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="c", state={}))
    result = await log.append("t", "other", [Noted(text="x")], require=[parent_row("t", "c")])
    assert 1 == result.version


async def test_an_append_whose_required_row_is_missing_writes_nothing(log: EventLog) -> None:
    """A missing required row raises the requirement's InvalidInput; nothing is written
    (no event, no stream head, no blob)."""
    with pytest.raises(InvalidInput) as raised:
        await log.append("t", "other", [Noted(text="x")], attach=[b"state"],
                         require=[parent_row("t", "absent")])
    assert "parent_id" == raised.value.field
    assert "names no such row" in str(raised.value)
    assert [] == await head(log, "t", "other")
    assert [] == await events(log)
    assert {} == dict(await log.storage.blob_refs("t"))


async def test_a_requirement_never_reads_another_tenants_rows(log: EventLog) -> None:
    """A requirement must name the append's own tenant: another's is refused, unread."""
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="u", session_id="s", run_id=RUN, checkpoint_id="c", state={}))
    with pytest.raises(InvalidInput) as raised:
        await log.append("t", "other", [Noted(text="x")], require=[parent_row("u", "c")])
    assert "require" == raised.value.field
    with pytest.raises(InvalidInput) as unknown:
        await log.append("t", "other", [Noted(text="x")], require=[
            RowRequired("no_such_view", {"tenant_id": "t"}, field="f", reason="r")])
    assert "require" == unknown.value.field
    assert [] == await events(log)


async def test_two_requirements_are_each_checked(log: EventLog) -> None:
    """With two requirements, the missing one's refusal is raised (PostgreSQL takes its
    transaction path for them)."""
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="c", state={}))
    missing = RowRequired(CHECKPOINTS, {"tenant_id": "t", "checkpoint_id": "gone"},
                          field="second", reason="is missing")
    with pytest.raises(InvalidInput) as raised:
        await log.append("t", "other", [Noted(text="x")],
                         require=[parent_row("t", "c"), missing])
    assert "second" == raised.value.field
    assert [] == await events(log)


async def test_append_at_head_checks_a_requirement_too(log: EventLog) -> None:
    """The fallback an ANY append takes after a lost race (`append_at_head`) checks the
    request's requirement in its transaction and writes nothing when it fails."""
    noted = Noted(text="x")
    tag, data = log.registry.encode(noted)
    draft = Draft(uuid.uuid4(), tag, data, noted, datetime.now(UTC))

    def build(at: tuple[int, bytes] | None) -> Any:
        return prepare("t", "other", at, [draft], {}, {}, INLINE_PROJECTIONS,
                       (parent_row("t", "absent"),))

    with pytest.raises(InvalidInput) as raised:
        await log.storage.append_at_head("t", "other", build)
    assert "parent_id" == raised.value.field
    assert [] == await events(log)


async def events(log: EventLog) -> list[Any]:
    """The events of stream ``other`` of tenant ``t``."""
    return [event async for event in log.read_stream("t", "other")]


@pytest.fixture
def driver_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call made on an asyncpg connection (each one round trip to the server)."""
    calls: list[str] = []
    for name in DRIVER_CALLS:
        real = getattr(asyncpg.Connection, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name,
                    **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(asyncpg.Connection, name, counted)
    return calls


@pytest.mark.parametrize("target", ["postgresql", PGBOUNCER, CITUS], indirect=True)
async def test_postgres_create_with_a_parent_is_one_round_trip(
    target: BackendTarget, driver_calls: list[str]
) -> None:
    """On PostgreSQL a create with a parent is ONE call at the driver, as one without
    (issue 30 §3: it was two, a SELECT of the parent then the append), and a refused one
    is one call too, writing nothing."""
    async with open_log(target.url, **target.options()) as log:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="c0", state={"n": 0}))
        driver_calls.clear()
        for n in range(1, 6):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=RUN, checkpoint_id=f"c{n}",
                parent_id=f"c{n - 1}", state={"n": n}))
        creates = list(driver_calls)
        driver_calls.clear()
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="x",
                parent_id="absent", state={"n": -1}))
        refused = list(driver_calls)
        assert 6 == len(await log.checkpoints.list("t", "s"))
    assert "parent_id" == raised.value.field
    if "distributed=true" in target.url:  # Citus: the sequential statements, one transaction
        return
    assert (["fetch"] * 5, ["fetch"]) == (creates, refused)
