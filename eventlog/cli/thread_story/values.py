"""Payload bytes as an investigator reads them: decoded, rendered short or pretty, diffed.

Payloads are decoded by `eventlog.adapters._safe_decoding`, which imports nothing and calls
nothing the bytes name: a LangGraph value's objects are shown as their class's name and
fields, a call it would take code to make as ``<os.system('touch …') not decoded>``, and
every value is bounded in size and depth (a shared reference is paid for each time it is
shown). Agent Framework checkpoints are JSON whose non-JSON values are pickles, read the
same way (opcode by opcode, no global looked up). Reading a log never runs its bytes.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from eventlog.adapters._safe_decoding import (
    MAF_ENCODING,
    MAX_BYTES,
    Budget,
    NotDecoded,
    Shape,
    Unreadable,
    bound,
    read_payload,
    read_raw,
    shape_fields,
    shape_name,
)
from eventlog.adapters._safe_values import past_budget

__all__ = ["MAF_ENCODING", "SHORT", "Undecoded", "decode", "decode_elements", "diff",
           "one_line", "plain", "pretty", "short"]

SHORT = 120
"""A value whose one-line rendering is longer than this is shown by its size."""


class Undecoded:
    """A payload that could not be decoded here: its size and why."""

    def __init__(self, size: int, why: str) -> None:
        self.size = size
        self.why = why

    def __repr__(self) -> str:
        return f"<{self.size:,} B, not decoded: {self.why}>"


def decode(encoding: str, data: bytes) -> Any:
    """The value ``data`` holds (bounded, nothing of it run), or an `Undecoded` saying why
    it cannot be shown."""
    try:
        return read_payload(encoding, data)
    except Unreadable as error:
        return Undecoded(len(data), str(error))


def decode_elements(items: Sequence[tuple[str, bytes]], payloads: Mapping[bytes, bytes]
                    ) -> list[Any]:
    """The list of the payloads ``items`` names (``(encoding, digest)``, each in
    ``payloads``), read as one value: one budget for all of it, the values of a payload
    (`MAX_ITEMS`) and its bytes (`MAX_BYTES`), each distinct element decoded once and
    shown as often as it is named (paid for each time), the elements past the budget said
    to be. A manifest naming one element N times costs no more than one payload."""
    budget = Budget()
    room = MAX_BYTES
    raw: dict[bytes, Any] = {}
    shown: list[Any] = []
    for number, (encoding, digest) in enumerate(items):
        data = payloads[digest]
        room -= len(data)
        if budget.left <= 0 or room < 0:
            left = len(items) - number
            shown.append(past_budget(left, "element") if budget.left <= 0 else NotDecoded(
                f"{left:,} more element{'s' if left > 1 else ''}, past the {MAX_BYTES:,} "
                "bytes a value is decoded up to,"))
            break
        if digest not in raw:
            try:
                raw[digest] = read_raw(encoding, data)
            except Unreadable as error:
                raw[digest] = Undecoded(len(data), str(error))
        found = raw[digest]
        if isinstance(found, Undecoded):
            budget.left -= 1
            shown.append(found)
        else:
            shown.append(bound(found, budget=budget))
    return shown


def plain(value: Any) -> Any:
    """``value`` as JSON-like data (dicts, lists, strings, numbers) for rendering."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Undecoded | NotDecoded):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value):,} byte{'' if len(value) == 1 else 's'}>"
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if isinstance(value, Shape):
        fields = {k: plain(v) for k, v in shape_fields(value).items() if v is not None}
        return {"__class__": shape_name(value), **fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__class__": type(value).__name__,
                **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return {"__class__": type(value).__name__, **plain(dump())}
    return repr(value)


def one_line(value: Any) -> str:
    """A compact one-line rendering."""
    return json.dumps(plain(value), ensure_ascii=False, default=repr, sort_keys=False)


def short(value: Any, size: int | None = None) -> str:
    """The value on one line when it is short, else its kind and size."""
    if isinstance(value, Undecoded | NotDecoded):
        return repr(value)
    text = one_line(value)
    if len(text) <= SHORT:
        return text
    kind = shape_name(value) if isinstance(value, Shape) else type(value).__name__
    return f"<{kind}, {size if size is not None else len(text):,} B>"


def pretty(value: Any) -> str:
    """An indented rendering, for a checkpoint's values."""
    return json.dumps(plain(value), ensure_ascii=False, indent=2, default=repr)


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed from ``before`` to ``after``, one channel at a time: added and removed
    channels, and for a changed one either ``old → new`` or a unified diff of the pretty
    renderings when they are long."""
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            lines.append(f"+ {name} = {short(after[name])}")
        elif name not in after:
            lines.append(f"- {name} (was {short(before[name])})")
        elif plain(before[name]) != plain(after[name]):
            old, new = one_line(before[name]), one_line(after[name])
            if len(old) + len(new) <= 2 * SHORT:
                lines.append(f"~ {name}: {old} → {new}")
                continue
            lines.append(f"~ {name}:")
            lines.extend("    " + line for line in difflib.unified_diff(
                pretty(before[name]).splitlines(), pretty(after[name]).splitlines(),
                lineterm="", n=1) if not line.startswith(("---", "+++")))
    return lines
