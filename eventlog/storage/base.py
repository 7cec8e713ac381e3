"""What `open_log` needs of a backend: `StorageBackend`, the events, blobs, views and
transparency tree contracts together.

A backend stores the log (events and blobs) and the views, and nothing else. It never
decides: the log computes versions, hashes and view changes, and the backend makes them
durable atomically or not at all. Each capability is a contract of its own, fully
abstract, in `eventlog.storage.contracts` (with the optional ones: a replica to read
from, views rebuilt on open); a backend is the composition of those it implements.
"""

from __future__ import annotations

from eventlog.storage.contracts import (
    BlobStorage,
    ConsumerStorage,
    EventStorage,
    KeyStorage,
    TreeStorage,
    ViewStorage,
)
from eventlog.storage.requests import AppendRequest, PendingEvent, StreamVersionTaken


class StorageBackend(EventStorage, BlobStorage, ViewStorage, TreeStorage, KeyStorage,
                     ConsumerStorage):
    """The contracts every backend fulfils: `EventStorage`, `BlobStorage`, `ViewStorage`,
    `TreeStorage`, `KeyStorage` and `ConsumerStorage`. Adds nothing of its own; a backend
    that leaves any of their methods unwritten cannot be built (``TypeError`` naming the
    methods)."""


__all__ = ["AppendRequest", "PendingEvent", "StorageBackend", "StreamVersionTaken"]
