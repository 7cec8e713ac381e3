"""checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for workflow engines.

The public names below are loaded from their modules on first use (PEP 562), so importing
one module of the package (an event type, the records) loads neither the stores nor the
log nor a backend, and no import cycle runs through this file.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the one list of public names: each `from MODULE import NAME as NAME`
    from eventlog.checkpoints import CheckpointRecord as CheckpointRecord
    from eventlog.checkpoints import CheckpointStore as CheckpointStore
    from eventlog.checkpoints import RunInfo as RunInfo
    from eventlog.checkpoints import SessionInfo as SessionInfo
    from eventlog.checkpoints import TypedCheckpointStore as TypedCheckpointStore
    from eventlog.clock import Clock as Clock
    from eventlog.clock import system_clock as system_clock
    from eventlog.errors import BlobMissing as BlobMissing
    from eventlog.errors import CommitOutcomeUnknown as CommitOutcomeUnknown
    from eventlog.errors import ConsumerError as ConsumerError
    from eventlog.errors import ConsumerFenced as ConsumerFenced
    from eventlog.errors import ConsumerHeld as ConsumerHeld
    from eventlog.errors import ConsumerScopeChanged as ConsumerScopeChanged
    from eventlog.errors import ConsumerTampered as ConsumerTampered
    from eventlog.errors import CorruptBlob as CorruptBlob
    from eventlog.errors import CorruptEvent as CorruptEvent
    from eventlog.errors import EventLogError as EventLogError
    from eventlog.errors import ForgedEvent as ForgedEvent
    from eventlog.errors import InvalidEvent as InvalidEvent
    from eventlog.errors import InvalidId as InvalidId
    from eventlog.errors import InvalidInput as InvalidInput
    from eventlog.errors import InvalidURL as InvalidURL
    from eventlog.errors import NotThreadHead as NotThreadHead
    from eventlog.errors import PayloadTooLarge as PayloadTooLarge
    from eventlog.errors import ReleaseNotHeld as ReleaseNotHeld
    from eventlog.errors import SchemaError as SchemaError
    from eventlog.errors import SchemaNotCurrent as SchemaNotCurrent
    from eventlog.errors import StateDecodeError as StateDecodeError
    from eventlog.errors import StorageError as StorageError
    from eventlog.errors import StoreLocked as StoreLocked
    from eventlog.errors import UnknownConsumer as UnknownConsumer
    from eventlog.errors import UnknownEventType as UnknownEventType
    from eventlog.errors import UnknownSchemaRevision as UnknownSchemaRevision
    from eventlog.errors import UnreadableEvent as UnreadableEvent
    from eventlog.errors import VersionConflict as VersionConflict
    from eventlog.events import SEALED as SEALED
    from eventlog.events import Event as Event
    from eventlog.events import EventRegistry as EventRegistry
    from eventlog.events import default_registry as default_registry
    from eventlog.events import register_event as register_event
    from eventlog.events.checkpoints import CheckpointCreated as CheckpointCreated
    from eventlog.events.checkpoints import SessionDeleted as SessionDeleted
    from eventlog.events.interrupts import Interrupt as Interrupt
    from eventlog.events.interrupts import Resume as Resume
    from eventlog.face import OpenLog as OpenLog
    from eventlog.hashing import content_digest as content_digest
    from eventlog.interrupts import BatchState as BatchState
    from eventlog.interrupts import CapacityExceeded as CapacityExceeded
    from eventlog.interrupts import CaptureHandle as CaptureHandle
    from eventlog.interrupts import CaptureOutcome as CaptureOutcome
    from eventlog.interrupts import ClaimRejection as ClaimRejection
    from eventlog.interrupts import ClaimResult as ClaimResult
    from eventlog.interrupts import CleanupResult as CleanupResult
    from eventlog.interrupts import Finish as Finish
    from eventlog.interrupts import InterruptClaim as InterruptClaim
    from eventlog.interrupts import InterruptOptions as InterruptOptions
    from eventlog.interrupts import InterruptStore as InterruptStore
    from eventlog.interrupts import Operation as Operation
    from eventlog.interrupts import OperationRegistry as OperationRegistry
    from eventlog.interrupts import PendingBatch as PendingBatch
    from eventlog.interrupts import ReconcileRejection as ReconcileRejection
    from eventlog.interrupts import ReconcileResult as ReconcileResult
    from eventlog.interrupts import Reconciliation as Reconciliation
    from eventlog.interrupts import Recovery as Recovery
    from eventlog.interrupts import RecoveryDisposition as RecoveryDisposition
    from eventlog.interrupts import ResumeInput as ResumeInput
    from eventlog.log import EventLog as EventLog
    from eventlog.log import SpilledViews as SpilledViews
    from eventlog.log import Subscription as Subscription
    from eventlog.opening import DEFAULT_URL as DEFAULT_URL
    from eventlog.opening import open_log as open_log
    from eventlog.opening import register_backend as register_backend
    from eventlog.records import ANY as ANY
    from eventlog.records import NO_STREAM as NO_STREAM
    from eventlog.records import AppendResult as AppendResult
    from eventlog.records import ConsumerInfo as ConsumerInfo
    from eventlog.records import ExpectedVersion as ExpectedVersion
    from eventlog.records import LogPage as LogPage
    from eventlog.records import RecordedEvent as RecordedEvent
    from eventlog.records import StreamAppend as StreamAppend
    from eventlog.records import StreamProblem as StreamProblem
    from eventlog.records import VerifyReport as VerifyReport


def _homes() -> dict[str, str]:
    """Each public name and the module it is loaded from, read from the imports above.

    They are the one list of the package's names: type checkers read them (the ``as``
    re-exports each), and this reads them again from the source at import, as
    ``lazy_loader.attach_stub`` reads a stub, so nothing is written twice.
    """
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name: str(node.module) for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


_HOME_OF = _homes()
"""Where each public name lives: loaded from there on first use."""

__all__ = sorted(_HOME_OF)


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
