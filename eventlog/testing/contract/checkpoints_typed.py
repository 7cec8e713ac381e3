"""Contract: the typed layer, ``log.checkpoints.typed(MyState)`` (the Go ``Store[T]``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
import pytest

from eventlog import CheckpointRecord, InvalidInput, OpenLog, StateDecodeError
from eventlog.testing.contract._base import ContractBase

RUN = uuid.uuid4()


class Conversation(msgspec.Struct, frozen=True):
    """A workflow state as an application would declare it."""

    messages: list[str]
    turn: int
    started: datetime


def record(state: object, checkpoint_id: str = "c", **fields: object) -> CheckpointRecord:
    """A create request in tenant ``t``, session ``s``."""
    values: dict[str, object] = {"tenant_id": "t", "session_id": "s", "run_id": RUN}
    values.update(fields)
    return CheckpointRecord(checkpoint_id=checkpoint_id, state=state, **values)  # type: ignore[arg-type]


STATE = Conversation(messages=["hi", "hello"], turn=2, started=datetime(2026, 1, 1, tzinfo=UTC))



class CheckpointsTypedContract(ContractBase):
    """Contract: the typed layer, ``log.checkpoints.typed(MyState)`` (the Go ``Store[T]``)."""

    async def test_a_struct_state_reads_back_as_the_struct(self, log: OpenLog) -> None:
        """create takes a Struct; read returns an equal Struct."""
        store = log.checkpoints.typed(Conversation)
        await store.create(record(STATE))
        assert STATE == await store.read("t", "s", "c")

    async def test_typed_create_returns_the_typed_state(self, log: OpenLog) -> None:
        """The written record carries the state value that was given."""
        created = await log.checkpoints.typed(Conversation).create(record(STATE))
        assert (STATE, "c") == (created.state, created.checkpoint_id)

    async def test_a_generic_type_is_a_state_type(self, log: OpenLog) -> None:
        """Anything msgspec decodes into is a state type, a list[int] included."""
        store = log.checkpoints.typed(list[int])
        await store.create(record([3, 1, 2]))
        assert [3, 1, 2] == await store.read("t", "s", "c")

    async def test_typed_read_of_an_absent_checkpoint_is_none(self, log: OpenLog) -> None:
        """A typed read answers None like the untyped one."""
        assert await log.checkpoints.typed(Conversation).read("t", "s", "missing") is None

    async def test_a_state_that_does_not_decode_names_the_checkpoint(self, log: OpenLog) -> None:
        """A stored state of another shape raises StateDecodeError naming the checkpoint."""
        await log.checkpoints.create(record({"unexpected": "shape"}, checkpoint_id="odd"))
        with pytest.raises(StateDecodeError) as raised:
            await log.checkpoints.typed(Conversation).read("t", "s", "odd")
        assert ("odd", "Conversation") == (raised.value.checkpoint_id, raised.value.target)
        assert "odd" in str(raised.value)

    async def test_a_bytes_state_does_not_decode_as_a_struct(self, log: OpenLog) -> None:
        """A state stored as raw bytes is not silently parsed as JSON for a Struct."""
        await log.checkpoints.create(record(b'{"messages": []}', checkpoint_id="raw"))
        with pytest.raises(StateDecodeError):
            await log.checkpoints.typed(Conversation).read("t", "s", "raw")

    async def test_a_bytes_typed_store_keeps_bytes_raw(self, log: OpenLog) -> None:
        """typed(bytes) stores and returns raw bytes, readable by the untyped store too."""
        await log.checkpoints.typed(bytes).create(record(b"\x00raw"))
        assert (b"\x00raw", b"\x00raw") == (
            await log.checkpoints.typed(bytes).read("t", "s", "c"),
            await log.checkpoints.read("t", "s", "c"),
        )

    async def test_typed_create_refuses_a_state_it_could_not_read_back(self, log: OpenLog) -> None:
        """A state that does not decode as the store's type is refused before writing."""
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.typed(Conversation).create(record({"turn": "two"}))
        assert ("state", []) == (raised.value.field, await log.checkpoints.list("t", "s"))

    async def test_typed_create_refuses_nan(self, log: OpenLog) -> None:
        """NaN is refused by the typed layer too (JSON would turn it into null)."""
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.typed(list[float | None]).create(record([float("nan")]))
        assert "state" == raised.value.field

    async def test_typed_create_validates_the_record(self, log: OpenLog) -> None:
        """The typed layer refuses bad ids like the untyped one."""
        with pytest.raises(InvalidInput) as raised:
            await log.checkpoints.typed(Conversation).create(record(STATE, tenant_id=""))
        assert "tenant_id" == raised.value.field

    async def test_the_typed_store_lists_and_deletes_like_the_untyped_one(
        self, log: OpenLog,
    ) -> None:
        """list, latest, index, runs, sessions and delete answer as on the untyped store."""
        store = log.checkpoints.typed(Conversation)
        await store.create(record(STATE, checkpoint_id="a"))
        await store.create(record(STATE, checkpoint_id="b", parent_id="a"))
        untyped = log.checkpoints
        assert await untyped.list("t", "s") == await store.list("t", "s")
        assert await untyped.list_by_run("t", RUN) == await store.list_by_run("t", RUN)
        assert await untyped.latest("t", "s") == await store.latest("t", "s")
        assert await untyped.index("t", "s", "a") == await store.index("t", "s", "a")
        assert await untyped.runs("t", "s") == await store.runs("t", "s")
        assert await untyped.sessions("t") == await store.sessions("t")
        assert 2 == await store.delete("t", "s")
