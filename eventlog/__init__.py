"""checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for workflow engines.

The public names below are loaded from their modules on first use (PEP 562), so importing
one module of the package (an event type, the records) loads neither the stores nor the
log nor a backend, and no import cycle runs through this file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventlog.checkpoints import (
        CheckpointRecord,
        CheckpointStore,
        RunInfo,
        SessionInfo,
        TypedCheckpointStore,
    )
    from eventlog.clock import Clock, system_clock
    from eventlog.errors import (
        CommitOutcomeUnknown,
        CorruptBlob,
        CorruptEvent,
        EventLogError,
        InvalidEvent,
        InvalidId,
        InvalidInput,
        InvalidURL,
        PayloadTooLarge,
        ReleaseNotHeld,
        SchemaError,
        StateDecodeError,
        StorageError,
        StoreLocked,
        UnknownEventType,
        UnknownSchemaRevision,
        VersionConflict,
    )
    from eventlog.events import Event, EventRegistry, default_registry, register_event
    from eventlog.events.checkpoints import CheckpointCreated, SessionDeleted
    from eventlog.events.interrupts import Interrupt, Resume
    from eventlog.face import OpenLog
    from eventlog.hashing import content_digest
    from eventlog.interrupts import (
        BatchState,
        CapacityExceeded,
        CaptureHandle,
        CaptureOutcome,
        ClaimRejection,
        ClaimResult,
        CleanupResult,
        Finish,
        InterruptClaim,
        InterruptOptions,
        InterruptStore,
        Operation,
        OperationRegistry,
        PendingBatch,
        ReconcileRejection,
        ReconcileResult,
        Reconciliation,
        Recovery,
        RecoveryDisposition,
        ResumeInput,
    )
    from eventlog.log import EventLog, SpilledViews
    from eventlog.opening import DEFAULT_URL, open_log, register_backend
    from eventlog.records import (
        ANY,
        NO_STREAM,
        AppendResult,
        ExpectedVersion,
        LogPage,
        RecordedEvent,
        StreamAppend,
        StreamProblem,
        VerifyReport,
    )

__all__ = [
    "ANY",
    "AppendResult",
    "BatchState",
    "CapacityExceeded",
    "CaptureHandle",
    "CaptureOutcome",
    "CheckpointCreated",
    "CheckpointRecord",
    "CheckpointStore",
    "ClaimRejection",
    "ClaimResult",
    "CleanupResult",
    "Clock",
    "CommitOutcomeUnknown",
    "CorruptBlob",
    "CorruptEvent",
    "DEFAULT_URL",
    "Event",
    "EventLog",
    "EventLogError",
    "EventRegistry",
    "ExpectedVersion",
    "Finish",
    "Interrupt",
    "InterruptClaim",
    "InterruptOptions",
    "InterruptStore",
    "InvalidEvent",
    "InvalidId",
    "InvalidInput",
    "InvalidURL",
    "LogPage",
    "NO_STREAM",
    "OpenLog",
    "Operation",
    "OperationRegistry",
    "PayloadTooLarge",
    "PendingBatch",
    "ReconcileRejection",
    "ReconcileResult",
    "Reconciliation",
    "RecordedEvent",
    "Recovery",
    "RecoveryDisposition",
    "ReleaseNotHeld",
    "Resume",
    "ResumeInput",
    "RunInfo",
    "SchemaError",
    "SessionDeleted",
    "SessionInfo",
    "SpilledViews",
    "StateDecodeError",
    "StorageError",
    "StoreLocked",
    "StreamAppend",
    "StreamProblem",
    "TypedCheckpointStore",
    "UnknownEventType",
    "UnknownSchemaRevision",
    "VerifyReport",
    "VersionConflict",
    "content_digest",
    "default_registry",
    "open_log",
    "register_backend",
    "register_event",
    "system_clock",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "eventlog.checkpoints": (
        "CheckpointRecord", "CheckpointStore", "RunInfo", "SessionInfo", "TypedCheckpointStore",
    ),
    "eventlog.clock": (
        "Clock", "system_clock",
    ),
    "eventlog.errors": (
        "CommitOutcomeUnknown", "CorruptBlob", "CorruptEvent", "EventLogError", "InvalidEvent",
        "InvalidId", "InvalidInput", "InvalidURL", "PayloadTooLarge", "ReleaseNotHeld",
        "SchemaError", "StateDecodeError", "StorageError", "StoreLocked", "UnknownEventType",
        "UnknownSchemaRevision", "VersionConflict",
    ),
    "eventlog.events": (
        "Event", "EventRegistry", "default_registry", "register_event",
    ),
    "eventlog.events.checkpoints": (
        "CheckpointCreated", "SessionDeleted",
    ),
    "eventlog.events.interrupts": (
        "Interrupt", "Resume",
    ),
    "eventlog.face": (
        "OpenLog",
    ),
    "eventlog.hashing": (
        "content_digest",
    ),
    "eventlog.interrupts": (
        "BatchState", "CapacityExceeded", "CaptureHandle", "CaptureOutcome", "ClaimRejection",
        "ClaimResult", "CleanupResult", "Finish", "InterruptClaim", "InterruptOptions",
        "InterruptStore", "Operation", "OperationRegistry", "PendingBatch", "ReconcileRejection",
        "ReconcileResult", "Reconciliation", "Recovery", "RecoveryDisposition", "ResumeInput",
    ),
    "eventlog.log": (
        "EventLog", "SpilledViews",
    ),
    "eventlog.opening": (
        "DEFAULT_URL", "open_log", "register_backend",
    ),
    "eventlog.records": (
        "ANY", "NO_STREAM", "AppendResult", "ExpectedVersion", "LogPage", "RecordedEvent",
        "StreamAppend", "StreamProblem", "VerifyReport",
    ),
}
"""Where each public name lives: loaded from there on first use."""

_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


if not TYPE_CHECKING:  # type checkers read the imports above, so a typo stays an error

    def __getattr__(name: str) -> Any:
        module = _HOME_OF.get(name)
        if module is None:
            raise AttributeError(f"module 'eventlog' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
