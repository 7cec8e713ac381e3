"""Test support for backends that live outside this package: the contract suite.

``pip install "checkpoint-eventlog[testing]"`` brings pytest, pytest-asyncio and
hypothesis; then subclass `BackendContract` in a test module (see its docstring), or one
suite per storage contract: `EventStorageContract`, `BlobStorageContract`,
`ViewStorageContract`, `TreeStorageContract`, `StoresContract`, and for a backend with hot
standbys `ReplicaStorageContract`. The test event types `Noted` and `Holding` (a `Noted`
naming the blobs its stream holds and releases) and the helpers `fresh_id` and `settle` are
here for a backend's own further tests; `eventlog.testing.interrupts` has the interrupt
tests' helpers (a fake clock, batches, answers).
"""

from __future__ import annotations

from eventlog.testing.contract import (
    BackendContract,
    BlobStorageContract,
    ContractBackend,
    EventStorageContract,
    ReplicaStorageContract,
    StoresContract,
    TreeStorageContract,
    ViewStorageContract,
)
from eventlog.testing.events import Holding, Noted
from eventlog.testing.helpers import fresh_id, settle

__all__ = [
    "BackendContract",
    "BlobStorageContract",
    "ContractBackend",
    "EventStorageContract",
    "Holding",
    "Noted",
    "ReplicaStorageContract",
    "StoresContract",
    "TreeStorageContract",
    "ViewStorageContract",
    "fresh_id",
    "settle",
]
