"""A backend from outside that does not implement batches refuses them clearly, by
mixing in `eventlog.storage.defaults.NoBatches`."""

from __future__ import annotations

import pytest

from eventlog import StorageError
from eventlog.storage.base import AppendRequest
from eventlog.storage.defaults import NoBatches
from eventlog.storage.memory import MemoryBackend


class Unbatched(NoBatches, MemoryBackend):
    """The memory backend with the batches of `NoBatches`."""


async def test_default_append_batch_refuses_more_than_one_request() -> None:
    """NoBatches commits a batch of one and refuses more with StorageError."""
    backend = Unbatched()
    requests = [AppendRequest(tenant_id="t", stream_id=s, events=[], changes=[])
                for s in ("a", "b")]
    assert [[]] == await backend.append_batch(requests[:1])
    with pytest.raises(StorageError):
        await backend.append_batch(requests)
