"""The workflow checkpoint store (``log.checkpoints``): at-least-once checkpoints per session.

Modules: `events` (what is appended), `records` (what goes in and comes out),
`decisions` (validation and encoding, no I/O), `store` (`CheckpointStore`), `typed` (the
Go-style ``Store[T]``), `ids` (UUIDv7).
"""

from eventlog.checkpoints.events import CheckpointCreated, SessionDeleted
from eventlog.checkpoints.ids import uuid7
from eventlog.checkpoints.records import CheckpointRecord, RunInfo, SessionInfo
from eventlog.checkpoints.store import CheckpointStore
from eventlog.checkpoints.thread_events import (
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadCopied,
    ThreadDeleted,
    ThreadWritesPut,
)
from eventlog.checkpoints.thread_records import Payload, ThreadCheckpoint, ThreadWrite
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.checkpoints.typed import TypedCheckpointStore

__all__ = [
    "CheckpointCreated",
    "CheckpointRecord",
    "CheckpointStore",
    "Payload",
    "RunInfo",
    "SessionDeleted",
    "SessionInfo",
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
