"""Contract: what checkpoint reads and writes cost — list never loads state, read is one
query bringing its blob, and a PostgreSQL create is one statement."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from eventlog import CheckpointRecord, EventLog, open_log
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sql import SqlBackend
from projections.query import ViewQuery
from tests.conftest import BackendTarget

BIG = 24 * 1024 * 1024
RUN = uuid.uuid4()


def record(session: str, state: Any, checkpoint_id: str = "c") -> CheckpointRecord:
    """A create request in tenant ``t``."""
    return CheckpointRecord(
        tenant_id="t", session_id=session, run_id=RUN, checkpoint_id=checkpoint_id, state=state
    )


async def fastest(call: Callable[[], Awaitable[object]], repeat: int = 15) -> float:
    """The shortest of ``repeat`` timings of ``call`` (the least noisy figure)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        best = min(best, time.perf_counter() - started)
    return best


def count_blob_reads(log: EventLog, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Record every blob the backend is asked for (the backend still answers)."""
    asked: list[bytes] = []
    real = log.storage.get_blob

    async def get_blob(tenant_id: str, digest: bytes) -> bytes | None:
        asked.append(digest)
        return await real(tenant_id, digest)

    monkeypatch.setattr(log.storage, "get_blob", get_blob)
    return asked


async def test_listing_a_huge_state_costs_what_listing_a_tiny_one_does(
    target: BackendTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose state is 24 MiB lists about as fast as one with a tiny state."""
    async with open_log(target.url, max_payload_bytes=2 * BIG, **target.options()) as log:
        await log.checkpoints.create(record("big", os.urandom(BIG)))
        await log.checkpoints.create(record("tiny", b"x"))
        asked = count_blob_reads(log, monkeypatch)
        tiny = await fastest(lambda: log.checkpoints.list("t", "tiny"))
        big = await fastest(lambda: log.checkpoints.list("t", "big"))
    assert [] == asked
    assert big < 5 * tiny + 0.002, f"list of the huge state took {big:.4f}s vs {tiny:.4f}s"


async def test_list_reads_no_blob(log: EventLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """list, list_by_run, latest, index, sessions and runs never ask for a state blob."""
    await log.checkpoints.create(record("s", {"a": 1}, "p"))
    await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=RUN, parent_id="p", state={"b": 2}
    ))
    asked = count_blob_reads(log, monkeypatch)
    await log.checkpoints.list("t", "s")
    await log.checkpoints.list_by_run("t", RUN)
    await log.checkpoints.latest("t", "s")
    await log.checkpoints.index("t", "s", parent_id="p")
    await log.checkpoints.sessions("t")
    await log.checkpoints.runs("t", "s")
    assert [] == asked


async def test_read_is_one_view_query_bringing_its_blob(
    log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read asks the backend one view query, which brings the row's blob along (on SQL, in
    the same statement: no separate blob read), for a checkpoint that exists, one that
    does not and another tenant's."""
    await log.checkpoints.create(record("s", {"a": 1}))
    asked = count_blob_reads(log, monkeypatch)
    queries: list[ViewQuery] = []
    real = log.storage.query

    async def query(wanted: ViewQuery) -> list[dict[str, Any]]:
        queries.append(wanted)
        return await real(wanted)

    monkeypatch.setattr(log.storage, "query", query)
    assert {"a": 1} == await log.checkpoints.read("t", "s", "c")
    assert None is await log.checkpoints.read("t", "s", "absent")
    assert None is await log.checkpoints.read("other-tenant", "s", "c")
    assert ["state_digest"] * 3 == [wanted.with_blob for wanted in queries]
    if isinstance(log.storage, SqlBackend):
        assert [] == asked


async def test_postgres_create_is_one_statement(
    target: BackendTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a create (with or without parent) never takes the multi-statement path."""
    if target.name != "postgresql":
        pytest.skip("the one-statement append is PostgreSQL's")

    async def refuse(*_: object) -> list[list[int]]:
        raise AssertionError("the create took the transactional fallback")

    async with open_log(target.url, **target.options()) as log:
        monkeypatch.setattr(PostgresBackend, "_append_in_transaction", refuse)
        await log.checkpoints.create(record("s", {"a": 1}, "p"))
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=RUN, parent_id="p", state={"a": 1},
            metadata={"note": "same state again"},
        ))
        assert 2 == len(await log.checkpoints.list("t", "s"))
