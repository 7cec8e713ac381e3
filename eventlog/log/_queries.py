"""What a `ViewQuery` must be before any backend sees it: every backend then answers it
the same way, or refuses it with the same error (an unknown column, a keyset of the
wrong length or a negative limit would otherwise mean different things to each)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from eventlog.errors import InvalidInput
from eventlog.validation import check_id
from projections.query import MAX_GUESSED_BLOBS, In, JsonContains, Lookup, Related, ViewQuery
from projections.thread_history import HistoryQuery
from projections.views import metadata as view_metadata


def check_query(query: object) -> ViewQuery:
    """``query``, or `InvalidInput` naming what is wrong with it."""
    if not isinstance(query, ViewQuery):
        _refuse(f"must be a ViewQuery, not {query!r}")
    if query.table not in view_metadata.tables:
        _refuse(f"names no view table: {query.table!r}")
    columns = view_metadata.tables[query.table].columns

    def check_column(part: str, name: Any) -> None:
        if not isinstance(name, str) or name not in columns:
            _refuse(f"{part} names no column of {query.table!r}: {name!r}")

    if not isinstance(query.where, Mapping):
        _refuse(f"where must be a mapping of column to value, not {query.where!r}")
    for name, value in query.where.items():
        check_column("where", name)
        if isinstance(value, In) and not isinstance(value.values, tuple):
            _refuse(f"In for {name!r} needs a tuple of values, not {value.values!r}")
        if isinstance(value, JsonContains) and not isinstance(value.value, Mapping):
            _refuse(f"JsonContains for {name!r} needs a mapping, not {value.value!r}")
    for part, names in (("order_by", query.order_by), ("columns", query.columns or ())):
        if not isinstance(names, tuple):
            _refuse(f"{part} must be a tuple of column names, not {names!r}")
        for name in names:
            check_column(part, name)
    if query.with_blob is not None:
        check_column("with_blob", query.with_blob)
    if query.lookup is not None:
        _check_lookup(query.lookup, check_column)
    if query.related:
        _check_related(query, check_column)
    if not isinstance(query.blobs, tuple) or len(query.blobs) > MAX_GUESSED_BLOBS or not all(
            isinstance(digest, bytes) and 0 < len(digest) <= 64 for digest in query.blobs):
        _refuse(f"blobs must be a tuple of at most {MAX_GUESSED_BLOBS} digests (bytes)")
    if not isinstance(query.descending, bool):
        _refuse(f"descending must be True or False, not {query.descending!r}")
    if query.after is not None:
        _check_keyset(query, columns)
    if query.limit is not None and (
            isinstance(query.limit, bool) or not isinstance(query.limit, int) or query.limit < 0):
        _refuse(f"limit must be a whole number ≥ 0 or None, not {query.limit!r}")
    tenant_id = query.where.get("tenant_id")
    if isinstance(tenant_id, str):
        check_id("tenant_id", tenant_id)
    return query


def check_history(query: object) -> HistoryQuery:
    """``query``, or `InvalidInput` naming what is wrong with it."""
    if not isinstance(query, HistoryQuery):
        _refuse(f"must be a HistoryQuery, not {query!r}")
    check_id("tenant_id", query.tenant_id)
    for name in ("thread_id", "namespace", "checkpoint_id"):
        if not isinstance(getattr(query, name), str):
            _refuse(f"{name} must be text, not {getattr(query, name)!r}")
    channels = query.channels
    if (not isinstance(channels, tuple) or not channels
            or not all(isinstance(name, str) for name in channels)
            or len(set(channels)) != len(channels)):
        _refuse(f"channels must be a tuple of distinct names, at least one, not {channels!r}")
    if len(channels) > 62:
        _refuse(f"a history walks at most 62 channels at once, not {len(channels)}")
    return query


def _check_lookup(lookup: object, check_column: Any) -> None:
    if not isinstance(lookup, Lookup):
        _refuse(f"lookup must be a Lookup, not {lookup!r}")
    if not isinstance(lookup.columns, tuple) or not lookup.columns:
        _refuse(f"lookup columns must be a tuple of column names, not {lookup.columns!r}")
    for name in lookup.columns:
        check_column("lookup", name)
    if not isinstance(lookup.keys, tuple) or not all(
            isinstance(key, tuple) and len(key) == len(lookup.columns) for key in lookup.keys):
        _refuse(f"lookup keys must be a tuple of {len(lookup.columns)}-tuples")


_RELATED_CHECKED: set[tuple[str, tuple[str, ...] | None, Related]] = set()
"""(table, columns, related) found valid: a read of a thread's checkpoint names the same
few each time, and checking one anew cost more than the read's own work."""


def _check_related(query: ViewQuery, check_column: Any) -> None:
    if not isinstance(query.related, tuple) or not all(
            isinstance(related, Related) for related in query.related):
        _refuse(f"related must be a tuple of Related, not {query.related!r}")
    if not isinstance(query.where.get("tenant_id"), str):
        _refuse("a query with related rows names its tenant_id (their rows are its)")
    for related in query.related:
        try:
            if (query.table, query.columns, related) in _RELATED_CHECKED:
                continue
        except TypeError:  # unhashable parts: checked below, and refused
            pass
        _check_one_related(query, related, check_column)
        if len(_RELATED_CHECKED) < 1000:
            _RELATED_CHECKED.add((query.table, query.columns, related))


def _check_one_related(query: ViewQuery, related: Related, check_column: Any) -> None:
    if related.table not in view_metadata.tables:
        _refuse(f"related names no view table: {related.table!r}")
    theirs = view_metadata.tables[related.table].columns
    for part, names in (("on", related.on), ("columns", related.columns),
                        ("pairs", related.pairs or ()),
                        ("with_blob", (related.with_blob,) if related.with_blob else ())):
        if not isinstance(names, tuple) or any(name not in theirs for name in names):
            _refuse(f"related {part} names no column of {related.table!r}: {names!r}")
    if not related.columns or (related.pairs is None) != (related.pairs_from is None):
        _refuse(f"related {related.name!r} needs columns, and pairs with pairs_from")
    for name in (*related.on, *([related.pairs_from] if related.pairs_from else [])):
        check_column("related", name)
        if query.columns is not None and name not in query.columns:
            _refuse(f"related {related.name!r} needs column {name!r} in columns")


def _check_keyset(query: ViewQuery, columns: Any) -> None:
    after = query.after
    if not isinstance(after, tuple) or len(after) != len(query.order_by) or not after:
        _refuse(f"after must be a tuple of one value per order_by column "
                f"{query.order_by!r}, not {after!r}")
    for name in query.order_by:
        # A keyset cannot step past NULL (SQL compares it to nothing): page by non-null
        # columns. Unpaged, every backend sorts NULL after every value.
        if columns[name].nullable:
            _refuse(f"after pages only by non-null columns; {name!r} of {query.table!r} "
                    "may be NULL")


def _refuse(problem: str) -> NoReturn:
    raise InvalidInput("query", problem[:200])
