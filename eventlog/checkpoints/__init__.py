"""The workflow checkpoint store (``log.checkpoints``): at-least-once checkpoints per session.

Its events live in `eventlog.events.checkpoints` and `eventlog.events.threads` (importable
without this store); ids are minted by `eventlog.ids` (UUIDv7). Modules:
`records` (what goes in and comes out), `decisions` (validation and encoding, no I/O),
`store` (`CheckpointStore`), `typed` (the Go-style ``Store[T]``), `threads`
(`ThreadCheckpoints`, ``log.checkpoints.threads``: checkpoints addressed by id, as
frameworks need), `thread_records` (what it takes and returns), `thread_decisions` (its
validation and events, no I/O), `thread_fence` (single-writer threads: fenced puts and
writes), `removal` (how a removal waits after losing a race), `elements` (growing values
stored element by element: manifests, deltas, their reads), `element_copies` (a copy's
manifests rebuilt under the target's sealed addresses, on an encrypted log).
"""

from eventlog.checkpoints.records import CheckpointRecord, RunInfo, SessionInfo
from eventlog.checkpoints.store import CheckpointStore
from eventlog.checkpoints.thread_records import (
    AdoptedWrites,
    Adoption,
    AdoptionBase,
    ChannelValue,
    Elements,
    Payload,
    ThreadCheckpoint,
    ThreadWrite,
)
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.checkpoints.typed import TypedCheckpointStore
from eventlog.events.checkpoints import CheckpointCreated, SessionDeleted
from eventlog.events.threads import (
    AdoptedCheckpoint,
    ThreadAdopted,
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadCopied,
    ThreadDeleted,
    ThreadWritesPut,
)
from eventlog.ids import uuid7

__all__ = [
    "AdoptedCheckpoint",
    "AdoptedWrites",
    "Adoption",
    "AdoptionBase",
    "ChannelValue",
    "CheckpointCreated",
    "CheckpointRecord",
    "CheckpointStore",
    "Elements",
    "Payload",
    "RunInfo",
    "SessionDeleted",
    "SessionInfo",
    "ThreadAdopted",
    "ThreadCheckpoint",
    "ThreadCheckpointPut",
    "ThreadCheckpoints",
    "ThreadCheckpointsRemoved",
    "ThreadCopied",
    "ThreadDeleted",
    "ThreadWrite",
    "ThreadWritesPut",
    "TypedCheckpointStore",
    "uuid7",
]
