"""A create racing a delete, staged through the storage's view query. (The checkpoint
store's contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from typing import Any

import pytest

from eventlog import CheckpointRecord, EventLog
from eventlog.testing.contract.checkpoints import record
from projections import ViewQuery


async def test_a_create_racing_a_delete_is_counted_and_released(
    log: EventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create that commits while delete is deciding makes delete decide again: it is
    removed and counted too, and its blob reference released."""
    await log.checkpoints.create(record(checkpoint_id="before", state={"v": 1}))
    real_query = log.storage.query
    raced: list[CheckpointRecord] = []

    async def query(view_query: ViewQuery) -> list[dict[str, Any]]:
        rows = await real_query(view_query)
        if view_query.columns == ("state_digest",) and not raced:  # delete's row read
            raced.append(await log.checkpoints.create(record(checkpoint_id="racer")))
        return rows

    monkeypatch.setattr(log.storage, "query", query)
    removed = await log.checkpoints.delete("t", "s")
    assert (2, [], {}) == (
        removed, await log.checkpoints.list("t", "s"), dict(await log.storage.blob_refs("t"))
    )
