"""The checkpoint store's decisions, as plain functions with no I/O.

Validating a record, encoding its state, deciding what a delete releases: everything the
store decides is here and tested without a database. `eventlog.checkpoints.store` only
reads views, calls these, and appends.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from eventlog.checkpoints.records import CheckpointRecord
from eventlog.errors import InvalidId, InvalidInput, PayloadTooLarge
from eventlog.events.checkpoints import SESSION_STREAM_PREFIX, CheckpointCreated
from eventlog.hashing import content_digest
from eventlog.validation import (
    MAX_ID_LENGTH,
    check_id,
    check_json_value,
    check_optional_id,
    check_uuid,
)
from projections.checkpoints import CHECKPOINTS
from projections.query import RowRequired

STREAM_PREFIX = SESSION_STREAM_PREFIX
"""Each session is the stream ``session:<session_id>`` of its tenant."""

MAX_SESSION_ID_LENGTH = MAX_ID_LENGTH - len(STREAM_PREFIX)
"""The longest session id (247): its stream id must fit the log's 255-character limit."""

MAX_STEP = 2**63 - 1

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class EncodedState:
    """A state as the blob that stores it."""

    encoding: str  # "json" or "bytes"
    data: bytes

    @property
    def digest(self) -> bytes:
        """The blob's content address."""
        return content_digest(self.data)


@dataclass(frozen=True, slots=True)
class CheckedRecord:
    """A create request whose every field passed validation (state aside)."""

    tenant_id: str
    session_id: str
    run_id: uuid.UUID
    checkpoint_id: str | None
    parent_id: str | None
    step: int
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeletePlan:
    """What deleting a session does: how many records go, which blob references drop."""

    count: int
    releases: dict[bytes, int]


def session_stream(session_id: str) -> str:
    """The stream a session's events are appended to."""
    return STREAM_PREFIX + session_id


def check_session_id(value: Any, field: str = "session_id") -> str:
    """A valid session id (at most 247 characters, so its stream id fits), else `InvalidId`
    naming ``field``."""
    check_id(field, value)
    if len(value) > MAX_SESSION_ID_LENGTH:
        raise InvalidId(
            field, f"is {len(value)} characters, the maximum is {MAX_SESSION_ID_LENGTH}"
        )
    return str(value)


def check_record(record: Any, max_bytes: int) -> CheckedRecord:
    """Validate everything in a create request but its state; raise naming the field."""
    if not isinstance(record, CheckpointRecord):
        raise InvalidInput("record", f"must be a CheckpointRecord, not {type(record).__name__}")
    return CheckedRecord(
        tenant_id=check_id("tenant_id", record.tenant_id),
        session_id=check_session_id(record.session_id),
        run_id=check_uuid("run_id", record.run_id),
        checkpoint_id=check_optional_id("checkpoint_id", record.checkpoint_id),
        parent_id=check_optional_id("parent_id", record.parent_id),
        step=check_step(record.step),
        metadata=normalise_metadata(record.metadata, max_bytes, plain=True),
    )


def check_step(value: Any) -> int:
    """A step number: a whole number from 0 to 2^63 - 1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise InvalidInput("step", f"must be a whole number from 0 to {MAX_STEP}, not {value!r}")
    return value


def normalise_metadata(metadata: Any, max_bytes: int, *, plain: bool = False) -> dict[str, Any]:
    """``metadata`` as the JSON object it is stored as (what every read returns). With
    ``plain`` (a checkpoint record's), a value JSON would not give back as it was (a
    tuple, a datetime, a non-str key…) is refused naming its path; without (a framework
    thread's, whose framework serialises it so), it is normalised as msgspec encodes it.

    A NUL character anywhere in it (a key or a string, at any depth) is refused:
    PostgreSQL's jsonb, which metadata filters compare in, cannot hold one, and one stored
    row holding it would fail every filtered listing of its tenant there.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata", f"must be a JSON object, not {type(metadata).__name__}")
    data = encode_json("metadata", dict(metadata), max_bytes, plain=plain)
    normalised: dict[str, Any] = _decoder.decode(data)
    if _holds_nul(normalised):
        raise InvalidInput("metadata", "must not contain a NUL character (U+0000) in a key "
                                       "or a string, at any depth")
    return normalised


def _holds_nul(value: Any) -> bool:
    """Whether a decoded JSON value holds U+0000 in a string or an object key."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in key or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


def encode_state(state: Any, max_bytes: int) -> EncodedState:
    """Bytes are stored as they are (and read back as bytes); anything else as its JSON
    encoding, and only what JSON gives back as it was given: None, bool, int, float, str,
    list and dict with str keys. A tuple, set, datetime, UUID, non-str key… anywhere in
    it is refused naming its path (`check_json_value` with ``plain``)."""
    if isinstance(state, bytes | bytearray | memoryview):
        data = bytes(state)
        if len(data) > max_bytes:
            raise PayloadTooLarge("state", len(data), max_bytes)
        return EncodedState("bytes", data)
    return EncodedState("json", encode_json("state", state, max_bytes, plain=True,
                                            hint=_TYPED_HINT))


_TYPED_HINT = " (a typed store, log.checkpoints.typed(T), keeps T's own types)"


def encode_json(
    field: str, value: Any, max_bytes: int, *, plain: bool = False, hint: str = ""
) -> bytes:
    """``value`` as JSON, refusing what JSON cannot hold (NaN and ±Infinity included) and
    values nested deeper than `MAX_JSON_DEPTH`; with ``plain``, also anything JSON would
    not give back as it was given (see `check_json_value`)."""
    check_json_value(field, value, plain=plain, hint=hint)
    try:
        data = _encoder.encode(value)
    except RecursionError:
        raise InvalidInput(field, "nests too deeply to encode") from None
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as error:
        raise InvalidInput(field, f"is not JSON-encodable: {error}") from None
    # msgspec writes a non-finite float as null, so only an encoding with a null can hide one.
    # A plain value was walked whole by `check_json_value`, which refuses them itself: the
    # second look (a `to_builtins` copy of the whole value, half a big state again) is
    # only for values that walk does not enter (Structs, dataclasses).
    if not plain and b"null" in data:
        where = non_finite_path(msgspec.to_builtins(value))
        if where is not None:
            raise InvalidInput(field, f"holds a non-finite number (NaN or Infinity) at {where}")
    if len(data) > max_bytes:
        raise PayloadTooLarge(field, len(data), max_bytes)
    return data


def non_finite_path(value: Any) -> str | None:
    """The path (like ``$.a[2]``) of the first NaN or ±Infinity in a JSON-like value."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path
        if isinstance(item, dict):
            stack.extend((f"{path}.{key}", child) for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def decode_state(encoding: str, data: bytes) -> Any:
    """A stored state as the store returns it: raw bytes, or the decoded JSON value."""
    return data if encoding == "bytes" else _decoder.decode(data)


def parent_required(checked: CheckedRecord) -> tuple[RowRequired, ...]:
    """What a create requires of the views: its parent, if it names one, is a checkpoint
    of this tenant's session. The refusal is the same whether the id is unknown, deleted,
    or another session's or tenant's."""
    if checked.parent_id is None:
        return ()
    return (RowRequired(
        CHECKPOINTS,
        {"tenant_id": checked.tenant_id, "session_id": checked.session_id,
         "checkpoint_id": checked.parent_id},
        field="parent_id", reason="names no checkpoint of this session"),)


def created_event(
    checked: CheckedRecord, checkpoint_id: str, state: EncodedState,
    subject: str | None = None,
) -> CheckpointCreated:
    """The event a create appends (``subject``: the one the caller named, if not the
    session's own id)."""
    return CheckpointCreated(
        session_id=checked.session_id,
        run_id=checked.run_id,
        checkpoint_id=checkpoint_id,
        parent_id=checked.parent_id,
        step=checked.step,
        state_digest=state.digest.hex(),
        state_encoding=state.encoding,
        state_size=len(state.data),
        metadata=checked.metadata,
        subject=None if subject == checked.session_id else subject,
    )


def written_record(
    checked: CheckedRecord, checkpoint_id: str, state: Any, position: int, recorded_at: datetime
) -> CheckpointRecord:
    """The record a create returns: what was asked, as stored, with where and when."""
    return CheckpointRecord(
        tenant_id=checked.tenant_id, session_id=checked.session_id, run_id=checked.run_id,
        checkpoint_id=checkpoint_id, parent_id=checked.parent_id, step=checked.step,
        state=state, metadata=checked.metadata, position=position, recorded_at=recorded_at,
    )


def plan_delete(digests: Iterable[bytes]) -> DeletePlan:
    """Deleting rows with these state digests: one reference released per row."""
    counts = Counter(bytes(digest) for digest in digests)
    return DeletePlan(count=sum(counts.values()), releases=dict(counts))
