"""Checks every public entry point runs on its arguments before anything is written."""

from __future__ import annotations

import unicodedata
import uuid
from typing import Any

from eventlog.errors import InvalidId, InvalidInput

MAX_ID_LENGTH = 255


def check_id(field: str, value: Any) -> str:
    """Return ``value`` if it is a usable identifier, else raise `InvalidId` naming ``field``."""
    if not isinstance(value, str):
        raise InvalidId(field, f"must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidId(field, "must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(field, f"is {len(value)} characters, the maximum is {MAX_ID_LENGTH}")
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidId(field, f"contains the control character {char!r}")
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
