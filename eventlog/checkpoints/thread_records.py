"""What `ThreadCheckpoints` takes and returns: payloads, checkpoints, pending writes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class Payload(msgspec.Struct, frozen=True):
    """Bytes and the caller's label for how to decode them (LangGraph: a serde type)."""

    encoding: str
    data: bytes


class Elements(msgspec.Struct, frozen=True):
    """A value stored element by element (`eventlog.checkpoints.elements`): its ordered
    items, each a `Payload` stored once however many versions and writes carry it.
    LangGraph's adapter gives every ``list`` value this way."""

    items: tuple[Payload, ...]


class ChannelValue(msgspec.Struct, frozen=True):
    """A channel of a checkpoint at ``version``: with ``value`` when this put stores it,
    without when an earlier put of the thread (and namespace) stored that version."""

    version: str
    value: Payload | Elements | None = None


class ThreadWrite(msgspec.Struct, frozen=True, kw_only=True):
    """One pending write of a checkpoint. ``value`` is None when reads skip payloads."""

    task_id: str
    idx: int
    channel: str
    task_path: str = ""
    value: Payload | Elements | None = None


class ThreadCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint of a thread, as the views hold it (the latest put of its id).

    ``state``, ``channels`` and ``writes`` are None when the read skipped payloads;
    ``position`` and ``recorded_at`` are those of the put the view row comes from.
    """

    tenant_id: str
    thread_id: str
    namespace: str
    checkpoint_id: str
    parent_id: str | None
    run_key: str | None
    step: int | None
    metadata: dict[str, Any]
    position: int
    recorded_at: datetime
    state: Payload | None = None
    channels: dict[str, Payload | Elements] | None = None
    writes: list[ThreadWrite] | None = None
    versions: dict[str, str] | None = None
    """Each channel's version at this checkpoint (the put's ``versions``), with the
    payloads; None when the read skipped them."""


class ChannelHistory(msgspec.Struct, frozen=True, kw_only=True):
    """What one channel's value at a checkpoint is rebuilt from (`ThreadCheckpoints.history`):
    the value stored at the nearest ancestor that stores one (``seed``, None when the walk
    reached the root without one) and the writes of the ancestors from that one on,
    oldest first, each checkpoint's in LangGraph's order (task path, task id, idx)."""

    writes: list[ThreadWrite] = []
    seed: Payload | Elements | None = None


class AdoptedWrites(msgspec.Struct, frozen=True, kw_only=True):
    """One task's pending writes on a checkpoint being adopted: ``(idx, channel, value)``."""

    task_id: str
    task_path: str = ""
    writes: list[tuple[int, str, Payload]]


class Adoption(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint taken in from another store (`ThreadCheckpoints.adopt`): what a
    put takes, the pending writes it had there, and the time the source recorded. Without
    ``state`` it is writes only, for a checkpoint the thread already holds."""

    checkpoint_id: str
    state: Payload | None
    namespace: str = ""
    channels: dict[str, Payload | ChannelValue] = {}
    parent_id: str | None = None
    run_key: str | None = None
    step: int | None = None
    metadata: dict[str, Any] = {}
    ts: str = ""
    writes: list[AdoptedWrites] = []


class AdoptionBase(msgspec.Struct, frozen=True, kw_only=True):
    """What a thread already holds, for an adoption to add only what is new: its stream
    version (the adoption's fence), its checkpoints as (namespace, id), its stored
    channel values as (namespace, channel, version) and its pending writes as (namespace,
    checkpoint id, task id, idx)."""

    version: int
    checkpoints: frozenset[tuple[str, str]]
    values: frozenset[tuple[str, str, str]]
    writes: frozenset[tuple[str, str, str, int]] = frozenset()
