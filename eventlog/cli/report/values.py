"""What a listed checkpoint held: its state, pretty-printed, and what changed since its
parent. Pure functions of the events and the blobs `collect` read for them.

Here: a session's checkpoints (`CheckpointCreated`), whose ``json`` states are shown; a
state in another encoding, or one erased since, says so instead. A framework thread's
steps are told from their `thread_story` (`eventlog.cli.report.threads.step_views`).
A value is cut at `MAX_SHOWN` characters and a difference at `MAX_DIFF_LINES` lines, so a
page listing 400 large checkpoints stays within issue 13's budget; what is nested deeper
than `MAX_DEPTH` levels is shown as `TOO_DEEP` (JSON of any depth is read: `read_json`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eventlog.adapters._safe_values import MAX_DEPTH, TOO_DEEP, read_json
from eventlog.cli.render import cell, plural
from eventlog.cli.sealed import unread_reason
from eventlog.events.checkpoints import CheckpointCreated
from eventlog.records import RecordedEvent

MAX_SHOWN = 4000
"""Characters of one pretty-printed state."""
MAX_DIFF_LINES = 60
JSON_ENCODINGS = frozenset({"json"})

_Checkpoint = CheckpointCreated


@dataclass(frozen=True, slots=True)
class StateView:
    """A listed checkpoint's state as the page shows it."""

    size: int
    encoding: str
    pretty: str = ""
    """The state as indented JSON (cut at `MAX_SHOWN`); empty when not shown."""
    note: str = ""
    """Why the state is not shown (erased, not JSON), or that it was cut."""
    parent: str | None = None
    """The parent checkpoint's id, when the difference is against it."""
    diff: list[str] = field(default_factory=list)
    """``+ path: value``, ``- path: value``, ``~ path: old → new``: what changed."""


def _checkpoints(
    events: Sequence[RecordedEvent],
) -> Iterator[tuple[RecordedEvent, _Checkpoint, _Checkpoint | None]]:
    """Each checkpoint record with the latest earlier record of its parent id."""
    latest: dict[str, _Checkpoint] = {}
    for event in events:
        payload = event.event
        if not isinstance(payload, CheckpointCreated):
            continue
        parent = latest.get(payload.parent_id or "")
        yield event, payload, parent
        latest[payload.checkpoint_id] = payload


def wanted_digests(events: Sequence[RecordedEvent], positions: set[int]) -> set[bytes]:
    """The state blobs the listed checkpoints (at ``positions``) and their parents need."""
    wanted: set[bytes] = set()
    for event, payload, parent in _checkpoints(events):
        if event.position in positions and payload.state_encoding in JSON_ENCODINGS:
            wanted.add(bytes.fromhex(payload.state_digest))
            if parent is not None:
                wanted.add(bytes.fromhex(parent.state_digest))
    return wanted


def state_views(
    events: Sequence[RecordedEvent], positions: set[int], blobs: Mapping[bytes, bytes]
) -> dict[int, StateView]:
    """The view of each listed checkpoint's state, by position."""
    views: dict[int, StateView] = {}
    for event, payload, parent in _checkpoints(events):
        if event.position in positions:
            views[event.position] = _view(payload, parent, blobs)
    return views


def _view(
    payload: _Checkpoint, parent: _Checkpoint | None, blobs: Mapping[bytes, bytes]
) -> StateView:
    size, encoding = payload.state_size, payload.state_encoding
    if encoding not in JSON_ENCODINGS:
        return StateView(size, encoding, note=f"{encoding} state: not shown here")
    found, value = _decoded(payload, blobs)
    if not found:
        return StateView(size, encoding, note=unread_reason(
            blobs, bytes.fromhex(payload.state_digest), "erased since (its session or "
            "thread was deleted) or not decodable as JSON"))
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    note = cut_note(text)
    if json.dumps(TOO_DEEP) in text:
        note = "; ".join(filter(None, [f"nested deeper than {MAX_DEPTH} levels: shown to that "
                                       f"depth, then {TOO_DEEP}", note]))
    if parent is None:
        return StateView(size, encoding, text[:MAX_SHOWN], note)
    parent_found, before = _decoded(parent, blobs)
    lines = difference(before, value) if parent_found else ["(the parent's state is erased)"]
    return StateView(size, encoding, text[:MAX_SHOWN], note, parent.checkpoint_id,
                     capped(lines))


def cut_note(text: str) -> str:
    """What the page says of a value longer than `MAX_SHOWN` (nothing when it is not)."""
    return f"cut at {MAX_SHOWN} of {plural(len(text), 'character')}" if len(
        text) > MAX_SHOWN else ""


def capped(lines: list[str]) -> list[str]:
    """A difference's first `MAX_DIFF_LINES` lines, and how many more there were."""
    if len(lines) <= MAX_DIFF_LINES:
        return lines
    return [*lines[:MAX_DIFF_LINES], f"… and {plural(len(lines) - MAX_DIFF_LINES, 'more line')}"]


def _decoded(payload: _Checkpoint, blobs: Mapping[bytes, bytes]) -> tuple[bool, Any]:
    data = blobs.get(bytes.fromhex(payload.state_digest))
    if data is None:
        return False, None
    try:
        return True, _shallow(read_json(data), MAX_DEPTH)
    except ValueError:
        return False, None


def _shallow(value: Any, depth: int) -> Any:
    """``value`` with each array or object below ``depth`` levels replaced by `TOO_DEEP`
    (so that printing and comparing it never recurse deeper)."""
    if not isinstance(value, dict | list):
        return value
    if depth <= 0:
        return TOO_DEEP
    if isinstance(value, list):
        return [_shallow(item, depth - 1) for item in value]
    return {key: _shallow(item, depth - 1) for key, item in value.items()}


def difference(before: Any, after: Any, path: str = "") -> list[str]:
    """What changed from ``before`` to ``after``, one line per changed leaf, key or item
    (objects are compared key by key, arrays item by item; paths like ``a.b[2]``)."""
    if isinstance(before, dict) and isinstance(after, dict):
        lines: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            where = f"{path}.{key}" if path else str(key)
            if key not in after:
                lines.append(f"- {where}: {_short(before[key])}")
            elif key not in before:
                lines.append(f"+ {where}: {_short(after[key])}")
            else:
                lines.extend(difference(before[key], after[key], where))
        return lines
    if isinstance(before, list) and isinstance(after, list):
        lines = []
        for index in range(max(len(before), len(after))):
            where = f"{path}[{index}]"
            if index >= len(after):
                lines.append(f"- {where}: {_short(before[index])}")
            elif index >= len(before):
                lines.append(f"+ {where}: {_short(after[index])}")
            else:
                lines.extend(difference(before[index], after[index], where))
        return lines
    if before == after and type(before) is type(after):
        return []
    return [f"~ {path or '(the whole state)'}: {_short(before)} → {_short(after)}"]


def _short(value: Any) -> str:
    return cell(json.dumps(value, ensure_ascii=False, default=str), 80)
