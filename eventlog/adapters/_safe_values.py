"""The values an untrusted payload is read into, and the bound on what is shown of one.

`Shape` is an object rebuilt without its class (its fields, its class's name), `NotDecoded`
what it would take running code to build (``<os.system('touch …') not decoded>``) or what
lies past a bound, `Global` a pickle's reference to a global that is never looked up.
`bound` copies a decoded value into a tree of at most `MAX_ITEMS` values and `MAX_DEPTH`
levels: a shared reference is paid for each time it is shown, a cycle is cut. `read_json`
reads JSON of any depth: what the JSON decoder cannot read for its depth (about a
thousand levels) is read with what lies past `MAX_DEPTH` levels replaced by `TOO_DEEP`.
"""

from __future__ import annotations

import _compat_pickle
import datetime as dt
import decimal
import ipaddress
import json
import pathlib
import re
import uuid
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAX_DEPTH", "MAX_ITEMS", "TOO_DEEP", "Budget", "Global", "NotDecoded", "Shape",
    "Unreadable", "bound", "call", "past_budget", "preview", "read_json", "shape_fields",
    "shape_kind", "shape_name",
]

MAX_DEPTH = 64
"""The deepest nesting of containers and objects shown."""
MAX_ITEMS = 20_000
"""The most values shown of one payload (a shared reference counts each time it is shown)."""
TOO_DEEP = f"<what is nested deeper than {MAX_DEPTH} levels not decoded>"
"""What stands for a value nested past `MAX_DEPTH` levels in JSON too deep to decode."""


class Unreadable(Exception):
    """A payload that cannot be read here; the message says why."""


class NotDecoded:
    """A value this reader would have had to run code to build, or one past a bound;
    ``repr`` is ``<what not decoded>``. A call keeps what it names (``kind``, ``args``)
    for the readers that look inside (an enum's value), but is never made."""

    __slots__ = ("args", "kind", "what")

    def __init__(self, what: str, kind: str | None = None, args: list[Any] | None = None,
                 ) -> None:
        self.what, self.kind, self.args = what, kind, args

    def __repr__(self) -> str:
        return f"<{self.what} not decoded>"


class Shape:
    """An object rebuilt without its class: its fields are its attributes (``args`` for
    positional arguments); `shape_kind` names the class (``module.name``). It has no
    methods of its own, so no field can hide one."""

    def __init__(self, kind: str, fields: dict[str, Any] | None = None) -> None:
        self.__dict__.update(fields or {})
        self.__dict__[_KIND] = kind

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in shape_fields(self).items())
        return f"{shape_name(self)}({fields})"


_KIND = "__shape__"


def shape_kind(shape: Shape) -> str:
    """``module.name`` of the class the object was an instance of."""
    return str(shape.__dict__.get(_KIND, "object"))


def shape_name(shape: Shape) -> str:
    """The class's own name (after the last dot)."""
    return shape_kind(shape).rsplit(".", 1)[-1]


def shape_fields(shape: Shape) -> dict[str, Any]:
    """The object's attributes."""
    return {k: v for k, v in shape.__dict__.items() if k != _KIND}


class Global:
    """A pickle's reference to a global (``module.name``, Python 2's names mapped to 3's as
    the unpickler does), never looked up."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        self.module, self.name = module, name

    @property
    def kind(self) -> str:
        return f"{self.module}.{self.name}"


# -- JSON of any depth -----------------------------------------------------------------------

def read_json(data: bytes | str, object_hook: Callable[[dict[str, Any]], Any] | None = None
              ) -> Any:
    """``json.loads(data)``; JSON nested deeper than the decoder reads is decoded with each
    value below `MAX_DEPTH` levels replaced by the string `TOO_DEEP`. `ValueError` when
    it is not JSON."""
    try:
        return json.loads(data, object_hook=object_hook)
    except RecursionError:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        return json.loads(_cut_below(raw, MAX_DEPTH), object_hook=object_hook)


_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""A JSON string (whose brackets are text) or a bracket."""


def _cut_below(data: bytes, depth: int) -> bytes:
    """The JSON text with each array or object opened below ``depth`` levels replaced by
    `TOO_DEEP` (one scan over its strings and brackets, no recursion)."""
    pieces, level, kept_from, cut_at = [], 0, 0, -1
    for token in _TOKENS.finditer(data):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            level += 1
            if level == depth + 1:
                pieces.append(data[kept_from:token.start()])
                cut_at = token.start()
        elif bracket in (b"]", b"}"):
            if level == depth + 1 and cut_at >= 0:
                pieces.append(json.dumps(TOO_DEEP).encode())
                kept_from, cut_at = token.end(), -1
            level -= 1
    pieces.append(data[kept_from:] if cut_at < 0 else b"")
    return b"".join(pieces)


# -- what is shown: bounded ------------------------------------------------------------------

_ATOMS = (bool, int, float, str, bytes, bytearray, NotDecoded, dt.date, dt.time, dt.timedelta,
          dt.tzinfo, uuid.UUID, decimal.Decimal, pathlib.PurePath, ipaddress.IPv4Address,
          ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network)
"""What a bounded tree holds as is (an interface is an address)."""


class Budget:
    """How many more values may be shown of the one value being read: one budget per
    value, whatever its shape (a list stored element by element spends one budget over
    all its elements, however many times it names each)."""

    def __init__(self, items: int = MAX_ITEMS) -> None:
        self.left = items


def bound(value: Any, items: int = MAX_ITEMS, depth: int = MAX_DEPTH,
          budget: Budget | None = None) -> Any:
    """``value`` as a tree of at most ``items`` values (or what is left of ``budget``) and
    ``depth`` levels: shared references are copied each time they are met (and paid for
    each time), a reference to an enclosing value and what lies past a bound are
    `NotDecoded`."""
    return _bound(value, budget if budget is not None else Budget(items), depth, set())


def past_budget(count: int, what: str) -> NotDecoded:
    """What stands for the last ``count`` items (``what``: "element") past the budget."""
    return NotDecoded(_past(count, what))


def _bound(value: Any, budget: Budget, depth: int, above: set[int]) -> Any:
    if budget.left <= 0:
        return NotDecoded(f"what lies past the {MAX_ITEMS:,} values a payload shows")
    budget.left -= 1
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 10_000:
        return NotDecoded(f"an integer of {value.bit_length():,} bits")
    if value is None or isinstance(value, _ATOMS):
        return value
    if isinstance(value, Global):
        return NotDecoded(f"a reference to {value.kind}")
    if depth <= 0:
        return NotDecoded(f"what is nested deeper than {MAX_DEPTH} levels")
    if id(value) in above:
        return NotDecoded("a reference to a value that encloses it")
    above.add(id(value))
    try:
        return _bound_container(value, budget, depth - 1, above)
    finally:
        above.discard(id(value))


def _bound_container(value: Any, budget: Budget, depth: int, above: set[int]) -> Any:
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if budget.left <= 0:
                out["…"] = NotDecoded(_past(len(value) - index, "entry"))
                break
            out[_key(key)] = _bound(item, budget, depth, above)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        listed = list(value)
        items = []
        for index, item in enumerate(listed):
            if budget.left <= 0:
                items.append(NotDecoded(_past(len(listed) - index, "value")))
                break
            items.append(_bound(item, budget, depth, above))
        return items
    if isinstance(value, Shape):
        return Shape(shape_kind(value), {name: _bound(item, budget, depth, above)
                                  for name, item in shape_fields(value).items()})
    return NotDecoded(f"a {type(value).__name__}")


def _past(count: int, what: str) -> str:
    many = f"{what[:-1]}ies" if what.endswith("y") else f"{what}s"
    return (f"{count:,} more {what if count == 1 else many}, past the {MAX_ITEMS:,} "
            "values a payload shows,")


def _key(key: Any) -> Any:
    if key is None or isinstance(key, str | int | float | bool):
        return key
    return preview(key)


def preview(value: Any, room: int = 100) -> str:
    """A short, bounded rendering of a call's arguments (for `NotDecoded`)."""
    if isinstance(value, str):
        text = repr(value if len(value) <= room else value[:room] + "…")
    elif isinstance(value, bytes | bytearray | memoryview):
        text = f"<{len(value):,} bytes>"
    elif isinstance(value, list | tuple):
        parts, used = [], 0
        for item in value[:8]:
            part = preview(item, max(8, room - used))
            parts.append(part)
            used += len(part) + 2
            if used > room:
                break
        more = ", …" if len(value) > len(parts) else ""
        text = ", ".join(parts) + more
    elif isinstance(value, dict):
        text = "{" + (f"{len(value):,} entries" if value else "") + "}"
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        text = f"<an integer of {value.bit_length():,} bits>"
    elif value is None or isinstance(value, bool | int | float):
        text = repr(value)
    elif isinstance(value, Shape):
        text = shape_kind(value)
    elif isinstance(value, Global):
        text = value.kind
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= room + 2 else text[:room] + "…"


def call(kind: str, args: Any) -> NotDecoded:
    listed = list(args) if isinstance(args, list | tuple) else [args]
    return NotDecoded(f"{kind}({preview(listed)})", kind, listed)
