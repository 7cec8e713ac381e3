"""Thread checkpoint decisions without I/O: validation, the events a call appends, and
which blob references a removal releases."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eventlog.checkpoints.decisions import normalise_metadata
from eventlog.checkpoints.elements import (
    ELEMENTS_ENCODING,
    Address,
    check_elements,
    write_manifest,
)
from eventlog.checkpoints.thread_records import ChannelValue, Elements, Payload
from eventlog.errors import InvalidId, InvalidInput, PayloadTooLarge
from eventlog.events.threads import (
    THREAD_STREAM_PREFIX,
    BlobRef,
    CheckpointKey,
    ThreadCheckpointPut,
    ValueKey,
    WriteRef,
)
from eventlog.hashing import content_digest
from eventlog.validation import CONTROL_CHARACTER, MAX_ID_LENGTH, check_id

STREAM_PREFIX = THREAD_STREAM_PREFIX
MAX_THREAD_ID_LENGTH = MAX_ID_LENGTH - len(STREAM_PREFIX)
MAX_PATH_LENGTH = 16_384
"""The longest task path or channel name (LangGraph nests ``node:task`` parts)."""
MAX_KEY_BYTES = 1_024
"""The longest namespace or run key, in bytes of UTF-8: they are parts of the views' keys,
and PostgreSQL refuses an index entry over ~2.7 KB (its btree row limit), so one limit,
checked up front, keeps every backend's answer the same."""
MAX_CHANNEL_BYTES = 256
"""The longest channel name or channel version, in bytes of UTF-8: both are in the key of
a stored channel value beside the namespace, and the three at their limits still fit."""


def thread_stream(thread_id: str) -> str:
    """The stream a thread's events are appended to."""
    return STREAM_PREFIX + thread_id


def check_thread_id(value: Any, field: str = "thread_id") -> str:
    """A valid thread id (at most 248 characters, so its stream id fits)."""
    check_id(field, value)
    if len(value) > MAX_THREAD_ID_LENGTH:
        raise InvalidId(field, f"is {len(value)} characters, the maximum is "
                               f"{MAX_THREAD_ID_LENGTH}")
    return str(value)


def check_path(field: str, value: Any, *, empty: bool = True) -> str:
    """A task path, channel, namespace or run key: any text up to `MAX_PATH_LENGTH`
    characters without control characters (unlike ids, these are paths the framework
    builds); namespaces and run keys are held to `MAX_KEY_BYTES` too (`check_key`)."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, not {type(value).__name__}")
    if not value and not empty:
        raise InvalidInput(field, "must not be empty")
    if len(value) > MAX_PATH_LENGTH:
        raise InvalidInput(field, f"is {len(value)} characters, the maximum is "
                                  f"{MAX_PATH_LENGTH}")
    if (found := CONTROL_CHARACTER.search(value)) is not None:
        raise InvalidInput(field, f"contains the control character {found.group()!r}")
    return value


def check_key(field: str, value: Any, *, empty: bool = True,
              limit: int = MAX_KEY_BYTES) -> str:
    """A namespace or run key (or, with ``limit=MAX_CHANNEL_BYTES``, a channel name or
    version): a path (`check_path`) of at most ``limit`` bytes of UTF-8."""
    check_path(field, value, empty=empty)
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidInput(field, f"is {size} bytes in UTF-8, the maximum is {limit}")
    return str(value)


def check_step(value: Any) -> int | None:
    """Any whole number or None: LangGraph's input checkpoint is step -1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**63:
        raise InvalidInput("step", f"must be a whole number or None, not {value!r}")
    return value


def check_payload(field: str, value: Any) -> Payload:
    """A `Payload` with a short encoding label and bytes."""
    if not isinstance(value, Payload) or not isinstance(value.data, bytes):
        raise InvalidInput(field, "must be a Payload(encoding, bytes)")
    check_id(f"{field}.encoding", value.encoding)
    return value


def check_size(field: str, payload: Payload, max_bytes: int) -> Payload:
    """Refuse (`PayloadTooLarge`, naming the field, the size and the limit) a payload over
    ``max_bytes``, before anything is hashed or sent."""
    if len(payload.data) > max_bytes:
        raise PayloadTooLarge(field, len(payload.data), max_bytes)
    return payload


def put_event(
    *,
    thread_id: str,
    namespace: str,
    checkpoint_id: str,
    parent_id: str | None,
    run_key: str | None,
    step: int | None,
    state: Payload,
    channels: Mapping[str, Payload | ChannelValue],
    metadata: Mapping[str, Any],
    max_bytes: int,
) -> tuple[ThreadCheckpointPut, list[bytes]]:
    """The put event and the payloads it attaches (one reference each), all validated.

    A channel given as a bare `Payload` is stored under its digest as version (content
    addressed); a `ChannelValue` names its version and carries the value only when this
    put stores it.
    """
    state = check_size("state", check_payload("state", state), max_bytes)
    refs = []
    versions: dict[str, str] = {}
    for name, given in channels.items():
        check_key("channel", name, empty=False, limit=MAX_CHANNEL_BYTES)
        channel = _channel_value(name, given)
        versions[name] = channel.version
        value = channel.value
        if isinstance(value, Payload):
            check_size(f"channels[{name!r}]", value, max_bytes)
            refs.append((BlobRef(name=name, encoding=value.encoding,
                                 digest=content_digest(value.data).hex(),
                                 version=channel.version), value.data))
    event = ThreadCheckpointPut(
        thread_id=check_thread_id(thread_id),
        namespace=check_key("namespace", namespace),
        checkpoint_id=check_id("checkpoint_id", checkpoint_id),
        parent_id=None if parent_id is None else check_id("parent_id", parent_id),
        run_key=None if run_key is None else check_key("run_key", run_key, empty=False),
        step=check_step(step),
        state_encoding=state.encoding,
        state_digest=content_digest(state.data).hex(),
        state_size=len(state.data),
        channels=[ref for ref, _ in refs],
        metadata=normalise_metadata(metadata, max_bytes),
        versions=versions,
    )
    return event, [state.data, *(data for _, data in refs)]


def _channel_value(name: str, given: Any) -> ChannelValue:
    if isinstance(given, Payload):
        payload = check_payload(f"channels[{name!r}]", given)
        return ChannelValue(content_digest(payload.data).hex(), payload)
    if not isinstance(given, ChannelValue):
        raise InvalidInput(f"channels[{name!r}]", "must be a Payload or a ChannelValue")
    check_key(f"channels[{name!r}].version", given.version, empty=False,
              limit=MAX_CHANNEL_BYTES)
    if isinstance(given.value, Elements):  # `ThreadCheckpoints.put` plans them first
        raise InvalidInput(f"channels[{name!r}].value",
                           "Elements are stored only by ThreadCheckpoints.put")
    if given.value is not None:
        check_payload(f"channels[{name!r}].value", given.value)
    return given


def values_to_release(
    remaining: Iterable[Mapping[str, Any]], values: Iterable[Mapping[str, Any]]
) -> list[ValueKey]:
    """The stored values (rows of namespace, channel, channel_version) that no remaining
    checkpoint (rows of namespace and its channel → version map) carries."""
    carried = {
        (row["namespace"], channel, version)
        for row in remaining
        for channel, version in row["versions"].items()
    }
    return [
        ValueKey(namespace=row["namespace"], channel=row["channel"],
                 version=row["channel_version"])
        for row in values
        if (row["namespace"], row["channel"], row["channel_version"]) not in carried
    ]


class WritesPlan:
    """What a put of writes appends: the writes and their payloads (one reference each)."""

    def __init__(self) -> None:
        self.writes: list[WriteRef] = []
        self.attach: list[bytes] = []


def plan_writes(
    writes: Sequence[tuple[int, str, Payload | Elements]], max_bytes: int | None = None,
    address: Address = content_digest,
) -> WritesPlan:
    """The writes of one call, validated; within the call the first write per index ≥ 0
    and the last per negative (special) index count, as the views will keep them. A value
    given as `Elements` is stored as a manifest and its elements
    (`eventlog.checkpoints.elements`); a value over ``max_bytes`` raises
    `PayloadTooLarge` naming its channel. Manifests name elements by ``address``."""
    chosen: dict[int, tuple[str, Payload | Elements]] = {}
    for idx, channel, payload in writes:
        if isinstance(idx, bool) or not isinstance(idx, int) or abs(idx) >= 2**63:
            raise InvalidInput("idx", f"must be a whole number, not {idx!r}")
        check_key("channel", channel, empty=False, limit=MAX_CHANNEL_BYTES)
        if isinstance(payload, Elements):
            check_elements("value", payload)
        else:
            check_payload("value", payload)
            if max_bytes is not None:
                check_size(f"writes[{channel!r}]", payload, max_bytes)
        if idx < 0 or idx not in chosen:
            chosen[idx] = (channel, payload)
    plan = WritesPlan()
    for idx, (channel, payload) in chosen.items():
        if isinstance(payload, Elements):
            manifest, elements = write_manifest(payload, address)
            plan.writes.append(WriteRef(
                idx=idx, channel=channel, encoding=ELEMENTS_ENCODING,
                digest=content_digest(manifest).hex(),
                elements=[content_digest(data).hex() for data in elements]))
            plan.attach += [manifest, *elements]
            continue
        plan.writes.append(WriteRef(idx=idx, channel=channel, encoding=payload.encoding,
                                    digest=content_digest(payload.data).hex()))
        plan.attach.append(payload.data)
    return plan


def releases_of(digests: Iterable[bytes]) -> dict[bytes, int]:
    """The references ``digests`` name, counted (a digest once per reference)."""
    return dict(Counter(digests))


def keys_to_prune(rows: Iterable[Mapping[str, Any]], keep: int) -> list[CheckpointKey]:
    """All but the ``keep`` highest checkpoint ids of each namespace."""
    by_namespace: dict[str, list[str]] = {}
    for row in rows:
        by_namespace.setdefault(row["namespace"], []).append(row["checkpoint_id"])
    return [
        CheckpointKey(namespace=namespace, checkpoint_id=checkpoint_id)
        for namespace, ids in sorted(by_namespace.items())
        for checkpoint_id in sorted(ids, reverse=True)[keep:]
    ]


def heads_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each namespace's highest checkpoint id among rows of namespace and checkpoint id."""
    heads: dict[str, str] = {}
    for row in rows:
        if row["checkpoint_id"] > heads.get(row["namespace"], ""):
            heads[row["namespace"]] = row["checkpoint_id"]
    return heads


def keys_of_runs(rows: Iterable[Mapping[str, Any]], run_keys: set[str]) -> list[CheckpointKey]:
    """The checkpoints whose run is one of ``run_keys``."""
    return [
        CheckpointKey(namespace=row["namespace"], checkpoint_id=row["checkpoint_id"])
        for row in rows
        if row["run_key"] in run_keys
    ]
