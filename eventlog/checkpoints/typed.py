"""The typed layer: `CheckpointStore.typed(MyState)`, the Go ``Store[T]`` over one state type.

``create`` takes a record whose ``state`` is a ``T`` (a msgspec Struct, a dataclass, a
``list[int]``: anything msgspec encodes) and refuses, before writing, a state that would
not decode back as ``T``, or would decode to something not equal to it (a tuple where
``T`` says ``Any``), so what a typed store writes it reads back as it was given. ``read``
decodes into ``T`` and raises `StateDecodeError` naming the checkpoint when the stored
state does not decode (a record written untyped, or by an older ``T``). A state stored as
raw bytes reads back only when ``T`` is ``bytes``. Everything else is the untyped store's.
"""

from __future__ import annotations

import builtins
import uuid
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from eventlog.checkpoints import decisions
from eventlog.checkpoints.decisions import EncodedState
from eventlog.checkpoints.records import CheckpointRecord, RunInfo, SessionInfo
from eventlog.errors import InvalidInput, StateDecodeError

T = TypeVar("T")
_SHORT = 80


def _short_repr(value: Any) -> str:
    """``repr(value)``, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + "…"


class UntypedStore(Protocol):
    """What the typed layer uses of `CheckpointStore` (which hands itself over in
    `CheckpointStore.typed`): named here, so this module imports no store."""

    @property
    def max_state_bytes(self) -> int: ...

    async def create_encoded(
        self, checked: decisions.CheckedRecord, state: Any, encoded: EncodedState
    ) -> CheckpointRecord: ...

    async def read_encoded(
        self, tenant_id: str, session_id: str, checkpoint_id: str
    ) -> EncodedState | None: ...

    async def list(self, tenant_id: str, session_id: str) -> builtins.list[CheckpointRecord]: ...

    async def list_by_run(
        self, tenant_id: str, run_id: uuid.UUID | str
    ) -> builtins.list[CheckpointRecord]: ...

    async def latest(self, tenant_id: str, session_id: str) -> CheckpointRecord | None: ...

    async def index(
        self, tenant_id: str, session_id: str, parent_id: str | None = None
    ) -> builtins.list[CheckpointRecord]: ...

    async def delete(self, tenant_id: str, session_id: str) -> int: ...

    async def sessions(
        self, tenant_id: str, *, after: str | None = None, limit: int = 100
    ) -> builtins.list[SessionInfo]: ...

    async def runs(self, tenant_id: str, session_id: str) -> builtins.list[RunInfo]: ...


class TypedCheckpointStore(Generic[T]):
    """A `CheckpointStore` whose states are values of one type ``T``."""

    def __init__(self, store: UntypedStore, state_type: type[T]) -> None:
        try:
            self._decoder: msgspec.json.Decoder[T] = msgspec.json.Decoder(state_type)
        except TypeError as error:
            raise InvalidInput(
                "state_type", f"msgspec cannot decode {state_type!r}: {error}"
            ) from None
        self._store = store
        self.state_type = state_type
        self._name = getattr(state_type, "__name__", repr(state_type))

    async def create(self, record: CheckpointRecord) -> CheckpointRecord:
        """Append a checkpoint whose ``state`` is a ``T``; see `CheckpointStore.create`."""
        limit = self._store.max_state_bytes
        checked = decisions.check_record(record, limit)
        return await self._store.create_encoded(checked, record.state, self._encode(record.state))

    async def read(self, tenant_id: str, session_id: str, checkpoint_id: str) -> T | None:
        """The newest state with this id decoded as ``T``, or None when there is none here."""
        found = await self._store.read_encoded(tenant_id, session_id, checkpoint_id)
        return None if found is None else self._decode(checkpoint_id, found)

    async def list(self, tenant_id: str, session_id: str) -> builtins.list[CheckpointRecord]:
        """See `CheckpointStore.list`."""
        return await self._store.list(tenant_id, session_id)

    async def list_by_run(
        self, tenant_id: str, run_id: uuid.UUID | str
    ) -> builtins.list[CheckpointRecord]:
        """See `CheckpointStore.list_by_run`."""
        return await self._store.list_by_run(tenant_id, run_id)

    async def latest(self, tenant_id: str, session_id: str) -> CheckpointRecord | None:
        """See `CheckpointStore.latest`."""
        return await self._store.latest(tenant_id, session_id)

    async def index(
        self, tenant_id: str, session_id: str, parent_id: str | None = None
    ) -> builtins.list[CheckpointRecord]:
        """See `CheckpointStore.index`."""
        return await self._store.index(tenant_id, session_id, parent_id)

    async def delete(self, tenant_id: str, session_id: str) -> int:
        """See `CheckpointStore.delete`."""
        return await self._store.delete(tenant_id, session_id)

    async def sessions(
        self, tenant_id: str, *, after: str | None = None, limit: int = 100
    ) -> builtins.list[SessionInfo]:
        """See `CheckpointStore.sessions`."""
        return await self._store.sessions(tenant_id, after=after, limit=limit)

    async def runs(self, tenant_id: str, session_id: str) -> builtins.list[RunInfo]:
        """See `CheckpointStore.runs`."""
        return await self._store.runs(tenant_id, session_id)

    def _encode(self, state: Any) -> EncodedState:
        if self.state_type is bytes and isinstance(state, bytes):
            return decisions.encode_state(state, self._store.max_state_bytes)
        data = decisions.encode_json("state", state, self._store.max_state_bytes)
        try:
            decoded = self._decoder.decode(data)
        except msgspec.DecodeError as error:
            raise InvalidInput("state", f"does not decode back as {self._name}: {error}") from None
        if decoded != state:
            raise InvalidInput("state", f"would read back as {_short_repr(decoded)}, not as "
                                        f"given: {self._name} does not declare the types it "
                                        "holds (a datetime in an Any is stored as a string)")
        return EncodedState("json", data)

    def _decode(self, checkpoint_id: str, found: EncodedState) -> T:
        if found.encoding == "bytes":
            if self.state_type is bytes:
                return found.data  # type: ignore[return-value]
            raise StateDecodeError(checkpoint_id, self._name, "the state was stored as raw bytes")
        try:
            return self._decoder.decode(found.data)
        except msgspec.DecodeError as error:
            raise StateDecodeError(checkpoint_id, self._name, str(error)) from None
