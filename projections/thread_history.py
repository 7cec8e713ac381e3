"""The history of a thread checkpoint's channels: what LangGraph's ``DeltaChannel`` replays.

A `HistoryQuery` names a checkpoint and some channels. Its answer walks the checkpoint's
ancestors (``parent_id`` to ``checkpoint_id``, in the thread and namespace, each parent's
id below its child's, as LangGraph's uuid6 ids always are: a parent that is not older
ends the walk, so a cycle cannot loop) and, per channel, stops at the nearest ancestor
that names a stored value of it (its ``channels`` version has a `thread_channel_values`
row): that value is the channel's *seed*. Every ancestor the channel's walk reached,
the seed's included, gives its pending writes of that channel. The checkpoint's own
writes are not part of it (they are pending for the next step).

The answer is rows (`HistoryRow` keys): ``kind`` ``"write"`` or ``"value"``, ``depth``
(1 for the parent, 2 for its parent …), ``channel``, ``task_id``, ``task_path``,
``idx`` (None for a value), ``encoding``, ``digest`` (the blob's address, as the row names
it) and ``blob`` (its bytes as stored, None when the blob is gone: the log opens a sealed
one, `EventLog.history`, after checking that its bytes hash to ``digest``). SQL
backends answer it in one recursive statement of their own; the memory and file
backends with `history_rows` over their view rows. Both read only the query's
tenant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

_versions = msgspec.json.Decoder(dict[str, str])

HistoryRow = dict[str, Any]
"""One row of a history: see the module docstring for its keys."""


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """The history of ``channels`` (distinct names, at least one) at one checkpoint."""

    tenant_id: str
    thread_id: str
    namespace: str
    checkpoint_id: str
    channels: tuple[str, ...]


Row = Mapping[str, Any]


def history_rows(
    query: HistoryQuery,
    checkpoint: Callable[[str], Row | None],
    value: Callable[[str, str], Row | None],
    writes: Callable[[str], Sequence[Row]],
) -> list[HistoryRow]:
    """The history's rows from lookups of the query's thread and namespace: a checkpoint
    row by id, a channel value row by (channel, version), a checkpoint's write rows
    (what the memory backend has by key). Each row holds its blob's ``digest`` without
    ``blob``: the caller reads the blobs."""
    found: list[HistoryRow] = []
    child = checkpoint(query.checkpoint_id)
    walking = list(query.channels)
    depth = 0
    while child is not None and walking and child["parent_id"] is not None:
        row = checkpoint(child["parent_id"])
        if row is None or not row["checkpoint_id"] < child["checkpoint_id"]:
            break
        depth += 1
        versions = _versions.decode(row["channels"])
        for write in writes(row["checkpoint_id"]):
            if write["channel"] in walking:
                found.append({
                    "kind": "write", "depth": depth, "channel": write["channel"],
                    "task_id": write["task_id"], "task_path": write["task_path"],
                    "idx": write["idx"], "encoding": write["encoding"],
                    "digest": write["digest"],
                })
        for channel in list(walking):
            stored = None if channel not in versions else value(channel, versions[channel])
            if stored is not None:
                found.append({
                    "kind": "value", "depth": depth, "channel": channel, "task_id": None,
                    "task_path": None, "idx": None, "encoding": stored["encoding"],
                    "digest": stored["digest"],
                })
                walking.remove(channel)
        child = row
    return found
