"""SQL text the SQL backends build by hand on their hot paths, written once."""

from __future__ import annotations

from collections.abc import Sequence


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def on_conflict(names: Sequence[str], keys: Sequence[str], *, keep_existing: bool) -> str:
    """The ``ON CONFLICT`` clause of a view upsert: overwrite the non-key columns named,
    or leave an existing row as it is (``keep_existing``, or when only keys are named)."""
    updates = [f"{quote(n)} = EXCLUDED.{quote(n)}" for n in names if n not in keys]
    clause = f" ON CONFLICT ({', '.join(map(quote, keys))}) DO "
    if keep_existing or not updates:
        return clause + "NOTHING"
    return clause + "UPDATE SET " + ", ".join(updates)
