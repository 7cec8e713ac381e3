"""Opaque ``read_all`` cursors. Callers pass them back; only backends look inside.

Single-writer backends (memory, file, SQLite) use ``p:<position>``. PostgreSQL uses
``x:<transaction id>:<position>``, because its log order is (writer transaction, position).
"""

from __future__ import annotations

import re

from eventlog.errors import InvalidInput

MAX_POSITION = 2**63 - 1
"""The largest position a cursor may name (a signed 64-bit integer in SQL)."""
MAX_XID = 2**64 - 1
"""The largest PostgreSQL transaction id a cursor may name (xid8)."""
_DIGITS = re.compile(r"[0-9]{1,20}")


def encode_position(position: int) -> str:
    """The cursor after ``position`` for a single-writer backend."""
    return f"p:{position}"


def decode_position(cursor: str | None) -> int:
    """The position a single-writer cursor stands after (0 for the start).

    A PostgreSQL cursor is refused: its position is not an order on this backend, so
    resuming from it could skip events (log order there is by transaction first).
    """
    if cursor is None:
        return 0
    kind, _, rest = cursor.partition(":")
    if kind == "p" and is_number(rest, MAX_POSITION):
        return int(rest)
    if kind == "x":
        raise InvalidInput("after", f"{cursor[:80]!r} is a PostgreSQL cursor; this log is "
                                    "not on PostgreSQL: pass a cursor it returned")
    raise _not_a_cursor(cursor)


def encode_xid(tx_id: int, position: int) -> str:
    """The cursor after the event (``tx_id``, ``position``) on PostgreSQL."""
    return f"x:{tx_id}:{position}"


def decode_xid(cursor: str | None) -> tuple[int, int]:
    """The (transaction id, position) a PostgreSQL cursor stands after ((0, 0) at start).

    A single-writer cursor is accepted as (0, position) only at the start of the log, so a
    cursor carried between backends never silently skips events.
    """
    if cursor is None:
        return (0, 0)
    kind, _, rest = cursor.partition(":")
    parts = rest.split(":")
    if (
        kind == "x" and len(parts) == 2
        and is_number(parts[0], MAX_XID) and is_number(parts[1], MAX_POSITION)
    ):
        return (int(parts[0]), int(parts[1]))
    if kind == "p" and rest == "0":
        return (0, 0)
    raise _not_a_cursor(cursor)


def is_number(text: str, maximum: int) -> bool:
    """Whether ``text`` is plain ASCII digits naming a number in 0..``maximum``."""
    return _DIGITS.fullmatch(text) is not None and int(text) <= maximum




def _not_a_cursor(cursor: object) -> InvalidInput:
    return InvalidInput("after", f"{cursor!r} is not a cursor returned by read_all"[:200])
