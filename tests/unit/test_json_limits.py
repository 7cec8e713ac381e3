"""JSON values given to the stores: too deep or non-finite is InvalidInput naming the
field, at every entry point (issue 14, attack 9), never a RecursionError or a silent null."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import msgspec
import pytest

from eventlog import (
    CheckpointRecord,
    EventLog,
    Interrupt,
    InvalidInput,
    Operation,
    Reconciliation,
    Resume,
    ResumeInput,
    open_log,
)
from eventlog.validation import MAX_JSON_DEPTH, check_json_value

OPERATION = Operation("op", "1")


def deep(levels: int) -> Any:
    """A list nested ``levels`` deep."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


TOO_DEEP = deep(5_000)


@pytest.fixture
async def log() -> AsyncIterator[EventLog]:
    async with open_log("memory://", operations=[OPERATION]) as opened:
        yield opened


async def batch_on(log: EventLog, **interrupt: Any) -> tuple[str, str]:
    """A session with a checkpoint and a batch of one interrupt; (thread, batch id)."""
    thread = f"th-{uuid.uuid4().hex[:8]}"
    record = await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=thread, run_id=uuid.uuid4(), state={}))
    assert record.checkpoint_id is not None
    batch = await log.interrupts.create(
        "t", thread, [Interrupt(id="ok", reason="r", **interrupt)], record.checkpoint_id,
        operation=OPERATION)
    return thread, batch.batch_id


Entry = Callable[[EventLog, Any], Coroutine[Any, Any, object]]


async def state(log: EventLog, value: Any) -> object:
    return await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.uuid4(), state=value))


async def metadata(log: EventLog, value: Any) -> object:
    return await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={}, metadata={"m": value}))


async def response_schema(log: EventLog, value: Any) -> object:
    return await batch_on(log, response_schema={"type": "object", "x": value})


async def interrupt_metadata(log: EventLog, value: Any) -> object:
    return await batch_on(log, metadata={"m": value})


async def payload(log: EventLog, value: Any) -> object:
    thread, batch = await batch_on(log)
    return await log.interrupts.try_claim("t", ResumeInput(thread_id=thread, batch_id=batch,
        responses=[Resume(interrupt_id="ok", status="resolved", payload=value)]))


async def resume_metadata(log: EventLog, value: Any) -> object:
    thread, batch = await batch_on(log)
    return await log.interrupts.try_claim("t", ResumeInput(thread_id=thread, batch_id=batch,
        responses=[Resume(interrupt_id="ok", status="resolved", metadata={"m": value})]))


async def evidence(log: EventLog, value: Any) -> object:
    _, batch = await batch_on(log)
    return await log.interrupts.reconcile({"t"}, batch, "operator", Reconciliation(
        resolution="abandoned", evidence={"e": value}))


async def typed_state(log: EventLog, value: Any) -> object:
    return await log.checkpoints.typed(list[Any]).create(CheckpointRecord(
        tenant_id="t", session_id="s", run_id=uuid.uuid4(), state=[value]))


ENTRIES: list[Entry] = [state, metadata, response_schema, interrupt_metadata, payload,
                        resume_metadata, evidence, typed_state]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.__name__)
async def test_a_value_nested_too_deep_is_invalid_input(log: EventLog, entry: Entry) -> None:
    """5,000 levels of nesting: InvalidInput naming the field, not a RecursionError."""
    with pytest.raises(InvalidInput, match="deep"):
        await entry(log, TOO_DEEP)


@pytest.mark.parametrize("entry", [payload, resume_metadata, evidence, metadata],
                         ids=lambda entry: entry.__name__)
@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
async def test_a_non_finite_number_is_refused_not_stored_as_null(
    log: EventLog, entry: Entry, number: float,
) -> None:
    """NaN and ±Infinity are refused, naming where they are."""
    with pytest.raises(InvalidInput, match="non-finite"):
        await entry(log, {"x": [number]})


def test_the_depth_limit_is_exact() -> None:
    """MAX_JSON_DEPTH levels pass; one more is refused, with the path."""
    check_json_value("v", deep(MAX_JSON_DEPTH - 1))
    with pytest.raises(InvalidInput, match=r"at \$\[0\]"):
        check_json_value("v", deep(MAX_JSON_DEPTH + 1))
    assert msgspec.json.encode(deep(MAX_JSON_DEPTH - 1))
