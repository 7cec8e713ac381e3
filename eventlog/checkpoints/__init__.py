"""The workflow checkpoint store (``log.checkpoints``): at-least-once checkpoints per session.

Its events live in `eventlog.events.checkpoints` and `eventlog.events.threads` (importable
without this store); ids are minted by `eventlog.ids` (UUIDv7). Modules:
`records` (what goes in and comes out), `decisions` (validation and encoding, no I/O),
`store` (`CheckpointStore`), `typed` (the Go-style ``Store[T]``), `threads`
(`ThreadCheckpoints`, ``log.checkpoints.threads``: checkpoints addressed by id, as
frameworks need), `thread_records` (what it takes and returns), `thread_decisions` (its
validation and events, no I/O), `thread_fence` (single-writer threads: fenced puts and
writes), `write_batches` (tasks' writes waiting for one thread, appended together),
`removal` (how a removal waits after losing a race), `holdings` (what a
thread's checkpoints, values and writes hold, folded from its events for a removal),
`elements` (growing values
stored element by element: manifests, deltas, their reads), `element_copies` (a copy's
manifests rebuilt under the target's sealed addresses, on an encrypted log).

The records and events load with the package; the stores (`CheckpointStore`,
`ThreadCheckpoints`, `TypedCheckpointStore`) on first use (PEP 562, `eventlog._lazy`):
they import the log, its storage and the projections, SQLAlchemy with them, which a
program that only names a record (``from eventlog import CheckpointRecord``) never needs.
"""

from typing import TYPE_CHECKING

from eventlog._lazy import attach, deferred_names
from eventlog.checkpoints.records import CheckpointRecord, RunInfo, SessionInfo
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

if TYPE_CHECKING:  # the stores, loaded on first use: each `from MODULE import NAME as NAME`
    from eventlog.checkpoints.store import CheckpointStore as CheckpointStore
    from eventlog.checkpoints.threads import ThreadCheckpoints as ThreadCheckpoints
    from eventlog.checkpoints.typed import TypedCheckpointStore as TypedCheckpointStore
else:
    __getattr__ = attach(globals(), deferred_names(__file__))

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
