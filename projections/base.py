"""What a projection is: a named, pure fold from one recorded event to view changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from eventlog.records import RecordedEvent
from projections.changes import Change


@runtime_checkable
class Projection(Protocol):
    """A pure fold: no I/O, no clock, no randomness; the same event gives the same changes.

    ``fold`` sees every event of the log and returns nothing for events it ignores. It must
    not depend on ``event.position`` (unknown until insert): it writes `AT_POSITION` where
    a view column holds the producing event's position. Folds must be idempotent under
    re-delivery of the same event, which upserts keyed by the event's stream and version
    give for free.
    """

    name: str
    tables: tuple[str, ...]

    # A projection whose folds copy sealed event fields into view columns also names them,
    # ``sealed_columns: Mapping[str, Mapping[str, SealedPaths]]`` (table → column → paths:
    # `projections.views.sealed_columns_of`), so the log opens them on an encrypted log; a
    # projection without it copies none. With them, ``sealed_rows: Mapping[str, SealedRow]``
    # (`projections.views.sealed_rows_of`) says whose each table's rows' values are, and
    # the log refuses a value copied in from another row (`SealRefused`).

    def fold(self, event: RecordedEvent) -> Sequence[Change]:
        """The view changes ``event`` causes."""
        ...
