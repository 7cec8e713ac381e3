"""The backend contract suites: one per storage contract, and `BackendContract`, all of
them; each joins mixin classes of one subject (see `eventlog.testing.contract.suites`)."""

from __future__ import annotations

from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.contract.suites import (
    BackendContract,
    BlobStorageContract,
    EventStorageContract,
    ReplicaStorageContract,
    StoresContract,
    TreeStorageContract,
    ViewStorageContract,
)

__all__ = [
    "BackendContract",
    "BlobStorageContract",
    "ContractBackend",
    "ContractBase",
    "EventStorageContract",
    "ReplicaStorageContract",
    "StoresContract",
    "TreeStorageContract",
    "ViewStorageContract",
]
