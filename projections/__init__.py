"""Pure folds from the log to the views the stores read, and views rebuilt with them.

A projection folds one recorded event into view changes (`projections.changes`), with no
I/O. Backends apply the changes inline, in the append's transaction; `rebuild` applies the
same folds to the whole log (into memory, or into any `ViewSink` such as
``eventlog.SpilledViews``, a temporary file), `rebuild(until_position=…)` replays the views
as they stood at a past moment, and `compare_views` checks stored views against a rebuild.
"""

from projections.base import Projection
from projections.changes import (
    AT_POSITION,
    Change,
    Delete,
    Insert,
    InsertIfAbsent,
    Update,
    Upsert,
)
from projections.checkpoints import CheckpointViews
from projections.interrupts import InterruptBatches
from projections.memory import ViewTables
from projections.query import In, JsonContains, Lookup, ViewQuery
from projections.rebuilding import (
    ViewDifference,
    ViewSink,
    ViewStore,
    compare_views,
    fold_events,
    rebuild,
)
from projections.stream_heads import StreamHeads
from projections.threads import ThreadViews

INLINE_PROJECTIONS: tuple[Projection, ...] = (
    StreamHeads(),
    CheckpointViews(),
    InterruptBatches(),
    ThreadViews(),
)
"""The projections every log applies inline, in order."""

__all__ = [
    "AT_POSITION",
    "Change",
    "CheckpointViews",
    "Delete",
    "INLINE_PROJECTIONS",
    "In",
    "Insert",
    "InsertIfAbsent",
    "InterruptBatches",
    "JsonContains",
    "Lookup",
    "Projection",
    "StreamHeads",
    "ThreadViews",
    "Update",
    "Upsert",
    "ViewDifference",
    "ViewQuery",
    "ViewSink",
    "ViewStore",
    "ViewTables",
    "compare_views",
    "fold_events",
    "rebuild",
]
