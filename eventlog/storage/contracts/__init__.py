"""The storage contracts, one per capability, each fully abstract.

A ladder as `eventsourcing` builds its recorders: every contract extends
`StorageLifecycle` (a name, ``open``, ``close``) with the methods of one capability.

- `EventStorage`: appends and reads of the hash-chained events.
- `BlobStorage`: the content-addressed blobs those appends hold, and their counts.
- `ViewStorage`: queries over the view rows those appends change.
- `ReplicaStorage` (optional): a database a hot standby follows (``read_url``).
- `ViewsRebuiltOnOpen` (optional): views kept in memory, rebuilt by `open_log`.
- `TreeStorage`: the stored nodes of each tenant's transparency tree (derived data).
- `KeyStorage`: each (tenant, subject)'s data keys, wrapped (encryption, erasure).
- `ConsumerStorage`: durable consumers' positions and leases, and their page read.

`eventlog.storage.base.StorageBackend` is what `open_log` needs: events, blobs and views.
A backend is the composition of the contracts it implements; each contract's tests ship
in `eventlog.testing.contract`. `eventlog.storage.defaults` holds opt-in
implementations of some methods, for the backends they fit.
"""

from __future__ import annotations

from eventlog.storage.contracts.blobs import BlobStorage
from eventlog.storage.contracts.consumers import ConsumerClaim, ConsumerRow, ConsumerStorage
from eventlog.storage.contracts.events import EventStorage
from eventlog.storage.contracts.keys import KeyRow, KeyStorage
from eventlog.storage.contracts.lifecycle import StorageLifecycle
from eventlog.storage.contracts.rebuilt import ViewsRebuiltOnOpen
from eventlog.storage.contracts.replica import ReplicaStorage, caught_up
from eventlog.storage.contracts.tree import EMPTY_TREE, TreeExtension, TreeState, TreeStorage
from eventlog.storage.contracts.views import ViewStorage

__all__ = [
    "EMPTY_TREE",
    "BlobStorage",
    "ConsumerClaim",
    "ConsumerRow",
    "ConsumerStorage",
    "EventStorage",
    "KeyRow",
    "KeyStorage",
    "ReplicaStorage",
    "StorageLifecycle",
    "TreeExtension",
    "TreeState",
    "TreeStorage",
    "ViewStorage",
    "ViewsRebuiltOnOpen",
    "caught_up",
]
