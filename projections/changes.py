"""View changes: what a projection's fold returns, and what a backend applies inline.

A fold never reads or writes a view itself. It returns changes, and the storage backend
applies them in the same transaction as the events that caused them. A value may be
`AT_POSITION`: the global position of the event that produced the change, which only the
database knows once the event is inserted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


class _AtPosition:
    """Stands for the position of the event that produced a change."""

    _instance: _AtPosition | None = None

    def __new__(cls) -> _AtPosition:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "AT_POSITION"


AT_POSITION: Final = _AtPosition()


@dataclass(frozen=True, slots=True)
class Upsert:
    """Insert ``row``, or if a row with its key exists, overwrite the columns ``row`` names."""

    table: str
    row: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Insert:
    """Insert ``row``, whose key holds its event's own stream version (a record of what
    that event stored): new whenever its event is. Applied anywhere, a row already there
    is left unchanged (a second delivery of the event is harmless, as for
    `InsertIfAbsent`); but a write that inserts the event itself in the same statement
    knows the row is new, since the event's unique version key would refuse a second
    delivery of that statement first, and may write a plain insert (PostgreSQL's one
    statement append: no ``ON CONFLICT``, which logs a second WAL record a row and probes
    the key before inserting)."""

    table: str
    row: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class InsertIfAbsent:
    """Insert ``row`` unless a row with its key exists (which is then left unchanged)."""

    table: str
    row: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Update:
    """Overwrite ``values`` in the row whose primary key is ``key``; no row, no change."""

    table: str
    key: Mapping[str, Any]
    values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete every row whose columns equal ``where`` (a full or partial key)."""

    table: str
    where: Mapping[str, Any]


Change = Upsert | Insert | InsertIfAbsent | Update | Delete


def resolve(values: Mapping[str, Any], position: int) -> dict[str, Any]:
    """``values`` with `AT_POSITION` replaced by ``position``."""
    return {name: position if value is AT_POSITION else value for name, value in values.items()}


def change_values(change: Change) -> list[tuple[str, Any]]:
    """A change's (column, value) pairs in the order SQL places their parameters: the
    row's columns; an update's values, then its key; a delete's conditions."""
    if isinstance(change, Upsert | Insert | InsertIfAbsent):
        return list(change.row.items())
    if isinstance(change, Update):
        return [*change.values.items(), *change.key.items()]
    return list(change.where.items())


def change_shape(change: Change) -> tuple[Any, ...]:
    """What a change's SQL text depends on (its kind, table, columns, which of them are
    `AT_POSITION`, and an update's key): backends cache statements by it."""
    if isinstance(change, Upsert | Insert | InsertIfAbsent):
        row = change.row
        return (type(change).__name__, change.table,
                tuple([(name, row[name] is AT_POSITION) for name in row]), ())
    columns = tuple((name, value is AT_POSITION) for name, value in change_values(change))
    key = tuple(change.key) if isinstance(change, Update) else ()
    return (type(change).__name__, change.table, columns, key)
