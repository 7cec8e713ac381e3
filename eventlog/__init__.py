"""checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for workflow engines."""

from eventlog.checkpoints import (
    CheckpointCreated,
    CheckpointRecord,
    CheckpointStore,
    RunInfo,
    SessionDeleted,
    SessionInfo,
    TypedCheckpointStore,
)
from eventlog.clock import Clock, system_clock
from eventlog.errors import (
    CommitOutcomeUnknown,
    EventLogError,
    InvalidEvent,
    InvalidId,
    InvalidInput,
    InvalidURL,
    PayloadTooLarge,
    SchemaError,
    StateDecodeError,
    StorageError,
    StoreLocked,
    UnknownEventType,
    UnknownSchemaRevision,
    VersionConflict,
)
from eventlog.events import Event, EventRegistry, default_registry, register_event
from eventlog.hashing import content_digest
from eventlog.log import EventLog
from eventlog.opening import DEFAULT_URL, open_log
from eventlog.records import (
    ANY,
    NO_STREAM,
    AppendResult,
    ExpectedVersion,
    LogPage,
    RecordedEvent,
    StreamProblem,
    VerifyReport,
)

__all__ = [
    "ANY",
    "AppendResult",
    "CheckpointCreated",
    "CheckpointRecord",
    "CheckpointStore",
    "Clock",
    "CommitOutcomeUnknown",
    "DEFAULT_URL",
    "Event",
    "EventLog",
    "EventLogError",
    "EventRegistry",
    "ExpectedVersion",
    "InvalidEvent",
    "InvalidId",
    "InvalidInput",
    "InvalidURL",
    "LogPage",
    "NO_STREAM",
    "PayloadTooLarge",
    "RecordedEvent",
    "RunInfo",
    "SchemaError",
    "SessionDeleted",
    "SessionInfo",
    "StateDecodeError",
    "StorageError",
    "StoreLocked",
    "StreamProblem",
    "TypedCheckpointStore",
    "UnknownEventType",
    "UnknownSchemaRevision",
    "VerifyReport",
    "VersionConflict",
    "content_digest",
    "default_registry",
    "open_log",
    "register_event",
    "system_clock",
]
