"""What `ThreadCheckpoints` takes and returns: payloads, checkpoints, pending writes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class Payload(msgspec.Struct, frozen=True):
    """Bytes and the caller's label for how to decode them (LangGraph: a serde type)."""

    encoding: str
    data: bytes


class ChannelValue(msgspec.Struct, frozen=True):
    """A channel of a checkpoint at ``version``: with ``value`` when this put stores it,
    without when an earlier put of the thread (and namespace) stored that version."""

    version: str
    value: Payload | None = None


class ThreadWrite(msgspec.Struct, frozen=True, kw_only=True):
    """One pending write of a checkpoint. ``value`` is None when reads skip payloads."""

    task_id: str
    idx: int
    channel: str
    task_path: str = ""
    value: Payload | None = None


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
    channels: dict[str, Payload] | None = None
    writes: list[ThreadWrite] | None = None
