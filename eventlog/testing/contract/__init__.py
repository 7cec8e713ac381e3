"""The backend contract suite, one mixin class per subject, combined in `BackendContract`."""

from __future__ import annotations

import pytest

from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.contract.checkpoints import CheckpointsContract
from eventlog.testing.contract.checkpoints_input import CheckpointsInputContract
from eventlog.testing.contract.checkpoints_threads import CheckpointsThreadsContract
from eventlog.testing.contract.checkpoints_typed import CheckpointsTypedContract
from eventlog.testing.contract.input_edges import InputEdgesContract
from eventlog.testing.contract.interrupts import InterruptsContract
from eventlog.testing.contract.interrupts_admin import InterruptsAdminContract
from eventlog.testing.contract.log_append import LogAppendContract
from eventlog.testing.contract.log_bad_input import LogBadInputContract
from eventlog.testing.contract.log_batch import LogBatchContract
from eventlog.testing.contract.log_blobs import LogBlobsContract
from eventlog.testing.contract.log_corrupt import LogCorruptContract
from eventlog.testing.contract.log_lifecycle import LogLifecycleContract
from eventlog.testing.contract.log_logging import LogLoggingContract
from eventlog.testing.contract.log_query import LogQueryContract
from eventlog.testing.contract.log_read import LogReadContract
from eventlog.testing.contract.log_verify import LogVerifyContract


@pytest.mark.asyncio(loop_scope="function")
class BackendContract(
    LogAppendContract,
    LogReadContract,
    LogBatchContract,
    LogBlobsContract,
    LogQueryContract,
    LogBadInputContract,
    LogCorruptContract,
    LogLifecycleContract,
    LogLoggingContract,
    LogVerifyContract,
    CheckpointsContract,
    CheckpointsInputContract,
    CheckpointsTypedContract,
    CheckpointsThreadsContract,
    InterruptsContract,
    InterruptsAdminContract,
    InputEdgesContract,
):
    """Every contract a storage backend must keep, as one pytest test class to subclass.

    The tests open the backend only through `eventlog.open_log` (a backend registers its
    URL scheme with `eventlog.register_backend`) and use only what `open_log` gives back:
    the `EventLog` API, ``log.checkpoints``, ``log.interrupts``, ``log.verify()`` and
    reopening the store (or opening it again with extra options: a fake clock, interrupt
    settings). The name has no ``Test`` prefix, so pytest collects it only through a
    subclass::

        from eventlog.testing import BackendContract

        import my_backend  # calls eventlog.register_backend("myscheme", factory)

        class TestMyBackend(BackendContract):
            persistent = True

            def backend_url(self, tmp_path):
                return f"myscheme://{tmp_path}/store"

    Hooks:

    ``backend_url(self, tmp_path) -> str`` (required)
        The URL of a fresh, empty store for one test; ``tmp_path`` is the test's own
        temporary directory. Each test needs a store of its own.
    ``persistent: bool`` (class attribute, default ``True``)
        Whether a store closed and reopened at the same URL still holds what was written.
        With ``False`` (an in-memory store) the reopening tests are skipped.
    ``open_options(self) -> dict[str, Any]`` (default ``{}``)
        Extra keyword options for `open_log`, e.g. ``{"schema": ...}``.

    Per-test setup and cleanup that a URL cannot express (a fresh database schema to drop
    afterwards) goes in an autouse fixture of the subclass that stores what
    ``backend_url`` and ``open_options`` read on ``self``; pytest makes a new instance of
    the class for every test. The tests in a subclass can use the fixtures ``backend``
    (a `ContractBackend`: ``url``, ``options``, ``persistent``, ``open(**extra)``) and
    ``log`` (an open `EventLog` on a fresh store); the interrupt tests add ``clock`` (a
    `eventlog.testing.interrupts.FakeClock`) and ``ilog`` (a log driven by it). Every
    test is an asyncio test marked explicitly, so the host project needs pytest-asyncio
    but not its auto mode.
    """


__all__ = ["BackendContract", "ContractBackend", "ContractBase"]
