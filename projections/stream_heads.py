"""The stream-heads view: each stream's version and head hash.

`EventLog.verify` compares each chain's end against this row, which is how it notices a
stream whose tail was cut off (the chain of the remaining prefix still links).
"""

from __future__ import annotations

from collections.abc import Sequence

from eventlog.records import RecordedEvent
from projections.changes import AT_POSITION, Change, Upsert
from projections.views import STREAM_HEADS


class StreamHeads:
    """Folds every event into its stream's head row."""

    name: str = STREAM_HEADS
    tables: tuple[str, ...] = (STREAM_HEADS,)

    def fold(self, event: RecordedEvent) -> Sequence[Change]:
        """One upsert of the stream's head."""
        return (
            Upsert(
                STREAM_HEADS,
                {
                    "tenant_id": event.tenant_id,
                    "stream_id": event.stream_id,
                    "version": event.version,
                    "head_hash": event.hash,
                    "last_position": AT_POSITION,
                    "updated_at": event.recorded_at,
                },
            ),
        )
