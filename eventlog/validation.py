"""Checks every public entry point runs on its arguments before anything is written."""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

from eventlog.errors import InvalidId, InvalidInput

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


MAX_JSON_DEPTH = 64
"""How deeply a JSON value given to a store may nest. Deeper values are refused up front:
encoding, schema validation and decoding all recurse, and Python's stack does not bend."""


def check_json_value(field: str, value: Any) -> None:
    """Refuse (`InvalidInput` naming ``field`` and the path) a JSON-like value that nests
    deeper than `MAX_JSON_DEPTH` or holds NaN or ±Infinity, which JSON cannot carry and an
    encoder would silently write as null. Walks without recursion, so any depth is safe."""
    if _json_fits(value):
        return
    stack: list[tuple[str, Any, int]] = [("$", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(field, f"holds a non-finite number (NaN or Infinity) at {path}")
        if not isinstance(item, dict | list | tuple):
            continue
        if depth >= MAX_JSON_DEPTH:
            raise InvalidInput(field, f"nests more than {MAX_JSON_DEPTH} levels deep "
                                      f"(at {path[:120]})")
        children = item.items() if isinstance(item, dict) else enumerate(item)
        stack.extend((_child_path(path, key), child, depth + 1) for key, child in children)


def _json_fits(value: Any) -> bool:
    """The same walk as `check_json_value` without building paths: every state and
    metadata value passes through here, and paths are only needed to explain a refusal."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
            continue
        if not isinstance(item, dict | list | tuple):
            continue
        if depth >= MAX_JSON_DEPTH:
            return False
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, float):
                if not math.isfinite(child):
                    return False
            elif isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return True


def _child_path(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
