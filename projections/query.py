"""A small, backend-neutral query over one view table: the shape every store read takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class In:
    """A ``where`` value matching any of ``values``."""

    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ViewQuery:
    """Rows of ``table`` whose columns equal ``where``, ordered, keyset-paged and limited.

    ``after`` is a keyset: only rows whose ``order_by`` tuple sorts after it (before it when
    ``descending``). ``columns`` picks the columns returned (all when ``None``).
    """

    table: str
    where: Mapping[str, Any] = field(default_factory=dict)
    order_by: tuple[str, ...] = ()
    descending: bool = False
    after: tuple[Any, ...] | None = None
    limit: int | None = None
    columns: tuple[str, ...] | None = None


def row_matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether ``row`` satisfies every condition of ``where``."""
    for name, wanted in where.items():
        value = row.get(name)
        if isinstance(wanted, In):
            if value not in wanted.values:
                return False
        elif value != wanted:
            return False
    return True
