"""A backend from outside that does not implement batches refuses them clearly."""

from __future__ import annotations

import pytest

from eventlog import StorageError
from eventlog.storage.base import AppendRequest, StorageBackend
from eventlog.storage.memory import MemoryBackend


async def test_default_append_batch_refuses_more_than_one_request() -> None:
    """The contract's default commits a batch of one and refuses more with StorageError."""
    backend = MemoryBackend()
    requests = [AppendRequest(tenant_id="t", stream_id=s, events=[], changes=[])
                for s in ("a", "b")]
    assert [[]] == await StorageBackend.append_batch(backend, requests[:1])
    with pytest.raises(StorageError):
        await StorageBackend.append_batch(backend, requests)
