"""checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for workflow engines.

The public names below are loaded from their modules on first use (PEP 562), so importing
one module of the package (an event type, the records) loads neither the stores nor the
log nor a backend, and no import cycle runs through this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventlog._lazy import attach, deferred_names

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


_HOME_OF = deferred_names(__file__)
"""Where each public name lives, read from the imports above: loaded from there on first
use. They are the one list of the package's names: type checkers read them (the ``as``
re-exports each), and `eventlog._lazy` reads them again from the source."""

__all__ = sorted(_HOME_OF)


if not TYPE_CHECKING:  # type checkers read the imports above, so a typo stays an error
    __getattr__ = attach(globals(), _HOME_OF)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
