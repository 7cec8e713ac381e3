"""JSON values come back as they were given, or are refused naming the path (issue 21,
item 14).

A checkpoint's state and metadata and an interrupt's JSON fields were encoded by msgspec,
which writes a datetime, a UUID or a Decimal as a string, a set or a tuple as a list and
an int dict key as a string: what a read gave back was not what was written, on every
backend alike. Now only JSON's own types are taken (None, bool, int, float, str, list,
dict with str keys); anything else is `InvalidInput` naming the field and the path, and
nothing is written. A typed store keeps ``T``'s own types, and refuses a value its ``T``
would not give back equal.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from eventlog.checkpoints.decisions import decode_state, encode_state
from tests.conftest import BackendTarget

OPERATION = Operation("op", "1")


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int


WHEN = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
REFUSED: dict[str, tuple[Any, str]] = {
    # name: (a value holding it at $.items[1].v, the words the refusal names it with)
    "datetime": (WHEN, "is a datetime, which JSON cannot hold (it would read back as an "
                       "ISO 8601 string)"),
    "date": (date(2030, 1, 2), "is a date"),
    "uuid": (uuid.UUID(int=7), "is a UUID, which JSON cannot hold (it would read back as a "
                               "string)"),
    "set": ({1, 2}, "is a set, which JSON cannot hold (it would read back as a list)"),
    "frozenset": (frozenset({1}), "is a frozenset"),
    "tuple": ((1, 2), "is a tuple, which JSON cannot hold (it would read back as a list)"),
    "int key": ({1: "a"}, "has the key 1 (an int): JSON object keys are strings"),
    "bytes inside": (b"\x00", "is bytes, which JSON cannot hold"),
    "decimal": (Decimal("1.5"), "is a Decimal"),
    "enum": (Colour.RED, "is a Colour, which JSON cannot hold (it would read back as its "
                         "value)"),
    "dataclass": (Point(1), "is a Point, not a JSON value"),
}
PLAIN: Any = {"none": None, "yes": True, "no": False, "int": -(2**62), "big": 10**30,
              "float": 2.5, "negative zero": -0.0, "text": "é 東京 \U0001f600 \x1b",
              "empty": {}, "list": [[], [1, "a", None], {"nested": {"deeper": [0.1]}}]}


def holding(value: Any) -> Any:
    """``value`` at ``$.items[1].v`` of a plain object."""
    return {"items": [0, {"v": value}], "ok": "yes"}


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type all the way down (True is not 1, a tuple not a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or str(a) == str(b)  # -0.0 == 0.0, but the sign is kept too


def record(state: Any, metadata: dict[str, Any] | None = None, session: str = "s"
           ) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.uuid4(),
                            state=state, metadata=metadata or {})


async def test_plain_json_comes_back_as_it_was_given(log: EventLog) -> None:
    """Every JSON type, on every backend: create returns it and read gives it back, each
    value of the same type (state and metadata alike)."""
    written = await log.checkpoints.create(record(PLAIN, {"m": PLAIN}))
    assert written.checkpoint_id is not None
    assert same(PLAIN, written.state)
    assert same(PLAIN, await log.checkpoints.read("t", "s", written.checkpoint_id))
    listed = await log.checkpoints.list("t", "s")
    assert same({"m": PLAIN}, listed[0].metadata)


async def test_state_json_cannot_hold_is_refused_naming_the_path(log: EventLog) -> None:
    """On every backend, each type: InvalidInput naming the state, the path and the
    type; in the metadata as well; nothing is written. (One test per backend, not per
    type: a PostgreSQL schema per case would cost seconds.)"""
    for kind, (value, words) in REFUSED.items():
        with pytest.raises(InvalidInput, match=r"^state: \$\.items\[1\]\.v ") as refused:
            await log.checkpoints.create(record(holding(value)))
        assert words in str(refused.value), kind
        assert "log.checkpoints.typed(T)" in str(refused.value)
        with pytest.raises(InvalidInput, match=r"^metadata: \$\.m\.items\[1\]\.v ") as refused:
            await log.checkpoints.create(record({}, {"m": holding(value)}))
        assert words in str(refused.value), kind
    assert [] == await log.checkpoints.list("t", "s")


async def test_interrupt_json_fields_refuse_what_json_cannot_hold(
    target: BackendTarget,
) -> None:
    """An interrupt's metadata, a resume's payload and metadata and a ruling's evidence:
    each type refused by field and path, on every backend (a message is a string)."""
    async with target.open(operations=[OPERATION]) as log:
        written = await log.checkpoints.create(record({}, session="th"))
        assert written.checkpoint_id is not None
        batch = await log.interrupts.create("t", "th", [Interrupt(id="ok", reason="r")],
                                            written.checkpoint_id, operation=OPERATION)

        def answer(**fields: Any) -> ResumeInput:
            return ResumeInput(thread_id="th", batch_id=batch.batch_id, responses=[
                Resume(interrupt_id="ok", status="resolved", **fields)])

        for kind, (value, words) in REFUSED.items():
            entries = {
                "interrupts[0].metadata": log.interrupts.create(
                    "t", "th", [Interrupt(id="q", reason="r", metadata=holding(value))],
                    written.checkpoint_id, operation=OPERATION),
                "responses[0].payload": log.interrupts.try_claim(
                    "t", answer(payload=holding(value))),
                "responses[0].metadata": log.interrupts.try_claim(
                    "t", answer(metadata=holding(value))),
                "reconciliation.evidence": log.interrupts.reconcile(
                    {"t"}, batch.batch_id, "ops", Reconciliation(
                        resolution="abandoned", evidence=holding(value))),
            }
            for field, call in entries.items():
                with pytest.raises(InvalidInput) as refused:
                    await call
                said = str(refused.value)
                assert (True, True, True) == (field in said, "$.items[1].v" in said,
                                              words in said), (kind, said)
        inspection = await log.interrupts.inspect(["t"], batch.batch_id, limit=10)
        assert inspection is not None
        assert ["interrupt.batch_created"] == [entry.type for entry in inspection.audit]


async def test_a_typed_store_refuses_what_its_type_would_not_give_back() -> None:
    """``typed(dict[str, Any])`` holding a datetime would read back a string: refused.
    A type that declares its datetime keeps it. (Decided before any backend is asked:
    the memory backend shows it.)"""
    async with open_log("memory://") as log:
        loose = log.checkpoints.typed(dict[str, Any])
        with pytest.raises(InvalidInput, match=r"would read back as .* not as given"):
            await loose.create(record({"when": WHEN}))
        exact = log.checkpoints.typed(dict[str, datetime])
        written = await exact.create(record({"when": WHEN}))
        assert written.checkpoint_id is not None
        assert {"when": WHEN} == await exact.read("t", "s", written.checkpoint_id)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(codec="utf-8"))
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=5), inner, max_size=4),
    max_leaves=20,
)
NOT_JSON = st.sampled_from([value for value, _ in REFUSED.values()])


@settings(max_examples=30)
@given(JSON)
def test_any_json_value_encodes_and_decodes_to_itself(value: Any) -> None:
    """What the stores encode, they decode to the same value of the same types."""
    assert same(value, decode_state("json", encode_state(value, 10**7).data))


@settings(max_examples=30)
@given(st.lists(JSON, min_size=1, max_size=4), st.data())
def test_one_value_json_cannot_hold_anywhere_is_refused(
    values: list[Any], data: st.DataObject,
) -> None:
    """However deep it sits, a value JSON cannot hold is refused, its path named."""
    where = data.draw(st.integers(0, len(values) - 1))
    values[where] = {"deep": [data.draw(NOT_JSON)]}
    with pytest.raises(InvalidInput, match=rf"\$\[{where}\]\.deep\[0\] (is|has the key)"):
        encode_state(values, 10**7)
