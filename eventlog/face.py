"""`OpenLog`: what `open_log` yields — the log, and the stores built over it.

The log (`eventlog.log.EventLog`) knows no store. This face owns them: it builds the
checkpoint store, its thread store and the interrupt store over the log's primary side
(`EventLog.on_primary`: a store decides writes on what it reads, so it never reads a
replica) and hands each what it needs — the interrupt store gets the checkpoint store
(``recover`` reads a thread's latest checkpoint), the framework adapters get the thread
store. Everything else is the log's: an `OpenLog` is that `EventLog`, sharing its
connections, head cache, append path and open state, so ``log.append(...)``,
``log.read_stream(...)`` and the rest work on it as on the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from eventlog.checkpoints.store import CheckpointStore
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.errors import InvalidInput
from eventlog.events import EventRegistry
from eventlog.interrupts.models import InterruptOptions, Operation, OperationRegistry
from eventlog.interrupts.store import InterruptStore
from eventlog.log import EventLog
from eventlog.retention.store import RetentionStore


class OpenLog(EventLog):
    """An open `EventLog` with its stores: ``checkpoints``, ``threads`` and ``interrupts``.

    `eventlog.open_log` yields one. It is the log it was made from (the same storage,
    head cache, append path and open state: closing either closes both), so every
    `EventLog` method works on it. ``interrupt_options`` and ``operations`` configure
    the interrupt store (`InterruptStore`); None trusts every operation.
    """

    def __init__(
        self,
        log: EventLog,
        *,
        interrupt_options: InterruptOptions | None = None,
        operations: OperationRegistry | Iterable[Operation] | None = None,
    ) -> None:
        if not isinstance(log, EventLog):
            raise InvalidInput("log", f"must be an EventLog, not {log!r}"[:200])
        # The face IS that log (as `on_primary`'s twin is): it shares every part of it
        # rather than building a second head cache and append path over the same storage.
        vars(self).update(vars(log))
        self._log = log
        primary = log.on_primary()
        self._checkpoints = CheckpointStore(primary)
        self._threads = self._checkpoints.threads
        self._interrupts = InterruptStore(
            primary, interrupt_options, operations, checkpoints=self._checkpoints
        )
        self._retention = RetentionStore(primary, self._checkpoints)

    @property
    def log(self) -> EventLog:
        """The log this face was made from: the same log, without the stores."""
        return self._log

    @property
    def checkpoints(self) -> CheckpointStore:
        """The workflow checkpoint store over this log."""
        return self._checkpoints

    @property
    def threads(self) -> ThreadCheckpoints:
        """The thread store (checkpoints addressed by thread and namespace, what the
        framework adapters use); the same one as ``checkpoints.threads``."""
        return self._threads

    @property
    def interrupts(self) -> InterruptStore:
        """The human-in-the-loop interrupt store over this log."""
        return self._interrupts

    @property
    def retention(self) -> RetentionStore:
        """Legal holds and retention passes over this log (`RetentionStore`).

        Erasure (a keyring's ``erase``) is not the retention store's: a pass reports
        the subjects none of whose records remain, and a caller with a keyring hands its
        erasure to `RetentionStore.apply` as ``erase=``."""
        return self._retention

    def sibling(self, *, registry: EventRegistry | None = None) -> OpenLog:
        """`EventLog.sibling`, with stores of its own over the sibling (configured as
        this face's interrupt store is)."""
        return OpenLog(
            EventLog.sibling(self, registry=registry),
            interrupt_options=self._interrupts.options, operations=self._interrupts.operations,
        )
