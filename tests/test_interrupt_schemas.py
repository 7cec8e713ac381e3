"""Answer schemas as applications write them, end to end through the interrupt store:
created with pattern, format, $ref/$defs and dependentRequired; answers checked against
them; a schema that reaches outside itself refused when its batch is created (issue 24 §6)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import (
    CheckpointRecord,
    ClaimRejection,
    EventLog,
    Interrupt,
    InvalidInput,
    Operation,
    Resume,
    ResumeInput,
    open_log,
)

OPERATION = Operation("pay", "1")
PAYMENT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$"}},
    "type": "object",
    "properties": {
        "to": {"$ref": "#/$defs/iban"},
        "notify": {"type": "string", "format": "email"},
        "on": {"type": "string", "format": "date-time"},
        "card": {"type": "string"},
        "billing": {"type": "string"},
    },
    "required": ["to"],
    "dependentRequired": {"card": ["billing"]},
}


@pytest.fixture(params=["memory", "sqlite"])
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'log.db'}"
    async with open_log(url, operations=[OPERATION]) as opened:
        yield opened


async def batch(log: EventLog, schema: Any) -> tuple[str, str]:
    """A session with a checkpoint and a batch of one interrupt; (thread, batch id)."""
    thread = f"th-{uuid.uuid4().hex[:8]}"
    record = await log.checkpoints.create(CheckpointRecord(
        tenant_id="t", session_id=thread, run_id=uuid.uuid4(), state={}))
    assert record.checkpoint_id is not None
    created = await log.interrupts.create(
        "t", thread, [Interrupt(id="pay", reason="confirmation", response_schema=schema)],
        record.checkpoint_id, operation=OPERATION)
    return thread, created.batch_id


async def answer(log: EventLog, schema: Any, payload: Any) -> tuple[bool, str | None]:
    thread, batch_id = await batch(log, schema)
    result = await log.interrupts.try_claim("t", ResumeInput(
        thread_id=thread, batch_id=batch_id,
        responses=[Resume(interrupt_id="pay", status="resolved", payload=payload)]))
    assert result.claim is not None or result.reason is ClaimRejection.INVALID_PAYLOAD
    return result.claim is not None, result.detail


@pytest.mark.parametrize(
    ("payload", "claimed", "detail"),
    [
        ({"to": "DE89370400440532013000", "notify": "ada@example.com",
          "on": "2030-01-01T09:00:00+01:00", "card": "4111", "billing": "Ada"}, True, None),
        ({"to": "de89"}, False, "interrupt 'pay': payload.to: 'de89' does not match"),
        ({"to": "DE89370400440532013000", "notify": "ada"}, False,
         "interrupt 'pay': payload.notify: 'ada' is not a 'email'"),
        ({"to": "DE89370400440532013000", "on": "next monday"}, False,
         "interrupt 'pay': payload.on: 'next monday' is not a 'date-time'"),
        ({"to": "DE89370400440532013000", "card": "4111"}, False,
         "interrupt 'pay': payload: 'billing' is a dependency of 'card'"),
    ],
)
async def test_an_answer_is_checked_against_a_schema_an_application_wrote(
    log: EventLog, payload: Any, claimed: bool, detail: str | None,
) -> None:
    """The batch is created; each answer claims it, or is refused naming the field."""
    found = await answer(log, PAYMENT, payload)
    assert claimed == found[0]
    assert (detail is None) == (found[1] is None)
    assert found[1] is None or detail is None or found[1].startswith(detail)


@pytest.mark.parametrize(
    ("schema", "detail"),
    [
        ({"properties": {"to": {"$ref": "https://example.com/iban.json"}}},
         "#/properties/to/$ref: 'https://example.com/iban.json' does not resolve within the "
         "schema"),
        ({"properties": {"to": {"type": "string", "pattern": "[unclosed"}}},
         "#/properties/to/pattern: '[unclosed' is not a 'regex'"),
    ],
)
async def test_a_schema_that_reaches_outside_itself_is_refused_when_created(
    log: EventLog, schema: Any, detail: str,
) -> None:
    """InvalidInput names the interrupt's field and the place in the schema; no batch."""
    with pytest.raises(InvalidInput) as refused:
        await batch(log, schema)
    assert "interrupts[0].response_schema" == refused.value.field
    assert refused.value.reason.startswith(detail)
