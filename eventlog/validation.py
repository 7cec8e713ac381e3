"""Checks every public entry point runs on its arguments before anything is written."""

from __future__ import annotations

import enum
import math
import re
import uuid
from datetime import date, time
from decimal import Decimal
from typing import Any

from eventlog.errors import InvalidId, InvalidInput

DEFAULT_MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""The default largest encoded event, and largest blob, the log accepts (16 MiB)."""

DEFAULT_KEY_CACHE_SECONDS = 5.0
"""How long an encrypted log uses an unwrapped data key before reading its row again (so
an erasure made by another process is seen here within that long)."""

MAX_ID_LENGTH = 255

CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode's control (Cc: U+0000 to U+001F and U+007F to U+009F) and surrogate (Cs) characters,
which no id or path may hold (one regex search instead of a category lookup per
character: every append checks several ids)."""


def check_id(field: str, value: Any) -> str:
    """Return ``value`` if it is a usable identifier, else raise `InvalidId` naming ``field``."""
    if not isinstance(value, str):
        raise InvalidId(field, f"must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidId(field, "must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(field, f"is {len(value)} characters, the maximum is {MAX_ID_LENGTH}")
    if (found := CONTROL_CHARACTER.search(value)) is not None:
        raise InvalidId(field, f"contains the control character {found.group()!r}")
    return value


MAX_ACTOR_LENGTH = 255
"""The longest principal an event may name as its actor (characters)."""

_LINE_BREAK = re.compile("[\u2028\u2029]")


def check_actor(value: Any, field: str = "actor") -> str:
    """Return ``value`` if it can name the principal who appends an event: a string of 1 to
    `MAX_ACTOR_LENGTH` characters, not only whitespace, without control characters or line
    breaks (it is shown on one line of every timeline); else raise `InvalidInput`."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string naming who acts, not "
                                  f"{type(value).__name__}")
    if not value.strip():
        raise InvalidInput(field, "must name who acts, not be empty or only whitespace")
    if len(value) > MAX_ACTOR_LENGTH:
        raise InvalidInput(field, f"is {len(value)} characters, the maximum is "
                                  f"{MAX_ACTOR_LENGTH}")
    found = CONTROL_CHARACTER.search(value) or _LINE_BREAK.search(value)
    if found is not None:
        raise InvalidInput(field, f"contains the control character {found.group()!r}")
    return value


def check_optional_id(field: str, value: Any) -> str | None:
    """Like `check_id`, but ``None`` passes."""
    return None if value is None else check_id(field, value)


def check_uuid(field: str, value: Any) -> uuid.UUID:
    """Return ``value`` as a UUID; a UUID string is accepted, anything else is refused."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise InvalidInput(field, f"must be a UUID, not {value!r}"[:200])


def check_positive_limit(field: str, value: Any, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int ≥ 1 (and ≤ ``maximum``), else raise `InvalidInput`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(field, f"must be a whole number ≥ 1, not {value!r}")
    if maximum is not None and value > maximum:
        raise InvalidInput(field, f"must be at most {maximum}, not {value}")
    return value


def check_seconds(field: str, value: Any) -> float:
    """Return ``value`` as a float if it is a finite number of seconds ≥ 0, else raise
    `InvalidInput`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 <= value < float("inf")):
        raise InvalidInput(field, f"must be a number of seconds ≥ 0, not {value!r}")
    return float(value)


MAX_JSON_DEPTH = 64
"""How deeply a JSON value given to a store may nest. Deeper values are refused up front:
encoding, schema validation and decoding all recurse, and Python's stack does not bend."""


def check_json_value(field: str, value: Any, *, plain: bool = False, hint: str = "") -> None:
    """Refuse (`InvalidInput` naming ``field`` and the path) a JSON-like value that nests
    deeper than `MAX_JSON_DEPTH` or holds NaN or ±Infinity, which JSON cannot carry and an
    encoder would silently write as null. Walks without recursion, so any depth is safe.

    With ``plain``, also refuse anything JSON would not give back as it was given: only
    None, bool, int, float, str, list and dict with str keys pass (a subclass reads back
    as its base: an OrderedDict as a dict). A tuple, a set, a datetime, a UUID, bytes
    inside the value, an enum, a Decimal, a dict key that is no str, a msgspec Struct or a
    dataclass is refused naming its path, not silently turned into a string or a list;
    ``hint`` ends that message."""
    if _json_fits(value, plain):
        return
    stack: list[tuple[str, Any, int]] = [("$", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(field, f"holds a non-finite number (NaN or Infinity) at {path}")
        if plain and (problem := _not_plain(item)) is not None:
            raise InvalidInput(field, f"{path} is {problem}{hint}")
        if not isinstance(item, dict | list | tuple):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise InvalidInput(field, f"nests more than {MAX_JSON_DEPTH} levels deep "
                                      f"(at {path[:120]})")
        if plain and isinstance(item, dict):
            for key in item:
                if isinstance(key, str):
                    continue
                raise InvalidInput(field, f"{path} has the key {key!r} ({_named(key)}): "
                                          f"JSON object keys are strings; use str keys{hint}")
        children = item.items() if isinstance(item, dict) else enumerate(item)
        stack.extend((_child_path(path, key), child, depth + 1) for key, child in children)


_PLAIN = (str, int, float, list, dict)
"""JSON's own types (bool is an int, None is checked apart)."""

_READS_BACK = (
    (tuple, "a list", "pass a list"),
    (set | frozenset, "a list", "pass a list (sorted, if order must not vary)"),
    (bytes | bytearray | memoryview, "a base64 string",
     "only a whole checkpoint state may be bytes; encode them (e.g. base64) yourself"),
    (date | time, "an ISO 8601 string", "pass its isoformat()"),
    (uuid.UUID, "a string", "pass str() of it"),
    (Decimal, "a string", "pass a str or a float"),
    (enum.Enum, "its value", "pass its .value"),
)


def _not_plain(item: Any) -> str | None:
    """What ``item`` is and what it would read back as, when JSON cannot hold it."""
    if item is None or (isinstance(item, _PLAIN) and not isinstance(item, enum.Enum)):
        return None
    for types, back, advice in _READS_BACK:
        if isinstance(item, types):
            return (f"{_named(item)}, which JSON cannot hold (it would read back as "
                    f"{back}): {advice}")
    return (f"{_named(item)}, not a JSON value (None, bool, int, float, str, list, or "
            "dict with str keys): convert it")


def _named(item: Any) -> str:
    """``a tuple``, ``an int``, ``a UUID``, ``bytes``: the item's type with its article."""
    kind = type(item).__name__
    if kind == "bytes":
        return kind
    return f"{'an' if kind[:1].lower() in 'aeio' else 'a'} {kind}"


def _json_fits(value: Any, plain: bool = False) -> bool:
    """The same walk as `check_json_value` without building paths: every state and
    metadata value passes through here, and paths are only needed to explain a refusal.
    (It may say no where the walk with paths finds nothing: that walk decides.)"""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
            continue
        if plain and type(item) not in _EXACT and _not_plain(item) is not None:
            return False
        if not isinstance(item, dict | list | tuple):
            continue
        if depth >= MAX_JSON_DEPTH:
            return False
        if isinstance(item, dict):
            if plain and not all(type(key) is str for key in item):
                return False
            children: Any = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is float:
                if not math.isfinite(child):
                    return False
            elif kind in _SCALARS:
                continue
            elif plain or isinstance(child, dict | list | tuple | float):
                stack.append((child, depth + 1))
    return True


_SCALARS = frozenset({str, int, bool, type(None)})
_EXACT = frozenset({*_SCALARS, float, list, dict})
"""The types `_json_fits` passes without asking `_not_plain`."""


def _child_path(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
