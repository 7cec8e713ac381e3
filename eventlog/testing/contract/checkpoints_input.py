"""Contract: every bad argument to the checkpoint store is refused, naming the field, and
nothing is written."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

import pytest

from eventlog import CheckpointRecord, InvalidInput, OpenLog, PayloadTooLarge
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.helpers import settle

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


class Unencodable:
    """A value msgspec cannot encode."""


def record(**fields: Any) -> CheckpointRecord:
    """A valid create request, with ``fields`` replaced."""
    values: dict[str, Any] = {
        "tenant_id": "t", "session_id": "s", "run_id": RUN, "state": {"ok": True},
    }
    values.update(fields)
    return CheckpointRecord(**values)


async def event_count(log: OpenLog) -> int:
    """How many events the whole log holds (once PostgreSQL's read horizon has passed)."""
    await settle(log)
    return len((await log.read_all(limit=10_000)).events)


BAD_RECORDS: list[tuple[str, dict[str, Any]]] = [
    ("tenant_id", {"tenant_id": ""}),
    ("tenant_id", {"tenant_id": None}),
    ("tenant_id", {"tenant_id": "x" * 256}),
    ("tenant_id", {"tenant_id": "a\x00b"}),
    ("session_id", {"session_id": ""}),
    ("session_id", {"session_id": 7}),
    ("session_id", {"session_id": "s" * 248}),
    ("checkpoint_id", {"checkpoint_id": ""}),
    ("checkpoint_id", {"checkpoint_id": "line\nbreak"}),
    ("parent_id", {"parent_id": ""}),
    ("run_id", {"run_id": "not-a-uuid"}),
    ("run_id", {"run_id": 42}),
    ("run_id", {"run_id": None}),
    ("step", {"step": -1}),
    ("step", {"step": True}),
    ("step", {"step": 1.5}),
    ("step", {"step": 2**63}),
    ("state", {"state": Unencodable()}),
    ("state", {"state": {"x": float("nan")}}),
    ("state", {"state": [1, float("inf")]}),
    ("state", {"state": {"deep": [{"x": float("-inf")}]}}),
    ("state", {"state": float("nan")}),
    ("state", {"state": "\ud800"}),
    ("state", {"state": {(1, 2): "tuple key"}}),
    ("metadata", {"metadata": ["not", "an", "object"]}),
    ("metadata", {"metadata": {"x": Unencodable()}}),
    ("metadata", {"metadata": {"x": float("nan")}}),
    ("parent_id", {"parent_id": "never-written"}),
]


async def refused_field(call: Awaitable[object]) -> str | None:
    """The field an InvalidInput from ``call`` names (None if nothing was raised)."""
    try:
        await call
    except InvalidInput as error:
        return error.field
    return None


BAD_READS: list[tuple[str, str, tuple[Any, ...]]] = [
    ("read", "tenant_id", ("", "s", "c")),
    ("read", "session_id", ("t", "", "c")),
    ("read", "checkpoint_id", ("t", "s", "")),
    ("read", "checkpoint_id", ("t", "s", None)),
    ("list", "tenant_id", (None, "s")),
    ("list", "session_id", ("t", "s" * 248)),
    ("list_by_run", "tenant_id", ("", RUN)),
    ("list_by_run", "run_id", ("t", "nope")),
    ("latest", "session_id", ("t", "")),
    ("index", "session_id", ("t", "")),
    ("index", "parent_id", ("t", "s", "")),
    ("delete", "tenant_id", ("", "s")),
    ("delete", "session_id", ("t", "\x07")),
    ("runs", "session_id", ("t", "")),
    ("sessions", "tenant_id", ("",)),
]



class CheckpointsInputContract(ContractBase):
    """Contract: every bad argument to the checkpoint store is refused, naming the field,
    and nothing is written."""

    async def test_bad_creates_are_refused_naming_the_field(self, log: OpenLog) -> None:
        """Each create with one bad field raises InvalidInput for that field; nothing is
        written by any of them. (One test per backend walks every case: a store per case
        would cost a PostgreSQL schema each.)"""
        refused = [await refused_field(log.checkpoints.create(record(**fields)))
                   for _, fields in BAD_RECORDS]
        assert [field for field, _ in BAD_RECORDS] == refused
        assert 0 == await event_count(log)

    async def test_a_record_that_is_not_a_checkpoint_record_is_refused(self, log: OpenLog) -> None:
        """create takes a CheckpointRecord, not a dict."""
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.create({"tenant_id": "t"})  # type: ignore[arg-type]
        assert ("record", 0) == (raised.value.field, await event_count(log))

    async def test_a_session_id_of_247_characters_fits(self, log: OpenLog) -> None:
        """The longest session id whose stream id fits the log's limit is accepted."""
        await log.checkpoints.create(record(session_id="s" * 247))
        assert 1 == len(await log.checkpoints.list("t", "s" * 247))

    async def test_an_oversized_state_is_refused(self, backend: ContractBackend) -> None:
        """A state over max_payload_bytes raises PayloadTooLarge naming state; nothing written."""
        async with backend.open(max_payload_bytes=1000) as log:
            for state in ({"text": "x" * 1000}, b"y" * 1001):
                with pytest.raises(PayloadTooLarge) as raised:
                    await log.checkpoints.create(record(state=state))
                assert ("state", 1000) == (raised.value.field, raised.value.limit)
            assert 0 == await event_count(log)

    async def test_a_state_at_the_size_limit_is_accepted(self, backend: ContractBackend) -> None:
        """A bytes state of exactly max_payload_bytes is written."""
        async with backend.open(max_payload_bytes=1000) as log:
            await log.checkpoints.create(record(state=b"z" * 1000, checkpoint_id="c"))
            assert b"z" * 1000 == await log.checkpoints.read("t", "s", "c")

    async def test_a_parent_from_another_session_is_refused(self, log: OpenLog) -> None:
        """parent_id must name a checkpoint of the same session."""
        await log.checkpoints.create(record(session_id="other", checkpoint_id="p"))
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.create(record(parent_id="p"))
        assert ("parent_id", 1) == (raised.value.field, await event_count(log))

    async def test_a_parent_from_another_tenant_is_refused_like_an_unknown_one(
        self, log: OpenLog,
    ) -> None:
        """Another tenant's checkpoint as parent gets exactly the unknown-parent error."""
        await log.checkpoints.create(record(tenant_id="other", checkpoint_id="p"))
        with pytest.raises(InvalidInput) as foreign:
            await log.checkpoints.create(record(parent_id="p"))
        with pytest.raises(InvalidInput) as unknown:
            await log.checkpoints.create(record(parent_id="nobody"))
        assert (str(unknown.value).replace("nobody", "p")
                == str(foreign.value).replace("nobody", "p"))
        assert 1 == await event_count(log)

    async def test_a_parent_from_a_deleted_history_is_refused(self, log: OpenLog) -> None:
        """After a delete, the session's old checkpoints are no parents."""
        await log.checkpoints.create(record(checkpoint_id="p"))
        await log.checkpoints.delete("t", "s")
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.create(record(parent_id="p"))
        assert "parent_id" == raised.value.field

    async def test_bad_arguments_to_reads_and_delete_are_refused(self, log: OpenLog) -> None:
        """Every other entry point refuses a bad id naming it."""
        refused = [await refused_field(getattr(log.checkpoints, method)(*args))
                   for method, _, args in BAD_READS]
        assert [field for _, field, _ in BAD_READS] == refused

    @pytest.mark.parametrize("fields", [{"limit": 0}, {"limit": 10_001}, {"after": ""}])
    async def test_bad_session_paging_is_refused(
        self, log: OpenLog, fields: dict[str, Any],
    ) -> None:
        """sessions() refuses a limit outside 1..10000 and an empty cursor."""
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.sessions("t", **fields)
        assert next(iter(fields)) == raised.value.field
