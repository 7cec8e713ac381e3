"""The shipped suites, one per storage contract, and `BackendContract`, all of them.

Each suite is a pytest test class to subclass (the names have no ``Test`` prefix, so
pytest collects them only through a subclass). Each joins the mixins of its subject:
tests through the log's API, and the contract's methods asked of the backend directly
(``log.storage``, on what the log wrote).
"""

from __future__ import annotations

from eventlog.testing.contract.blob_storage import BlobStorageCalls
from eventlog.testing.contract.checkpoints import CheckpointsContract
from eventlog.testing.contract.checkpoints_fenced import CheckpointsFencedContract
from eventlog.testing.contract.checkpoints_input import CheckpointsInputContract
from eventlog.testing.contract.checkpoints_threads import CheckpointsThreadsContract
from eventlog.testing.contract.checkpoints_typed import CheckpointsTypedContract
from eventlog.testing.contract.event_storage import EventStorageCalls
from eventlog.testing.contract.input_edges import InputEdgesContract
from eventlog.testing.contract.interrupts import InterruptsContract
from eventlog.testing.contract.interrupts_actor import InterruptsActorContract
from eventlog.testing.contract.interrupts_admin import InterruptsAdminContract
from eventlog.testing.contract.key_storage import KeyStorageCalls
from eventlog.testing.contract.log_actor import LogActorContract
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
from eventlog.testing.contract.replica_storage import ReplicaStorageCalls
from eventlog.testing.contract.signature_storage import LogSignaturesContract, SignatureStorageCalls
from eventlog.testing.contract.tree_storage import TreeStorageCalls
from eventlog.testing.contract.view_storage import ViewStorageCalls


class EventStorageContract(
    EventStorageCalls,
    LogAppendContract,
    LogReadContract,
    LogBatchContract,
    LogBadInputContract,
    LogCorruptContract,
    LogLifecycleContract,
    LogLoggingContract,
    LogVerifyContract,
    LogActorContract,
    SignatureStorageCalls,
    LogSignaturesContract,
):
    """`EventStorage`: appends (single and batched, version conflicts), reads of streams
    and of the whole log, bad input, corrupt events, `verify` and rebuilt views, closing
    and reopening, who appended each event (its actor), each event's writer signature
    (stored as given, made by a writer key, checked by `verify` and the checked reads);
    and each event method asked directly."""


class BlobStorageContract(BlobStorageCalls, LogBlobsContract):
    """`BlobStorage`: blobs attached and released with appends, counted per stream and
    per tenant; and each blob method asked directly (``blob_refs_page``'s pages too)."""


class ViewStorageContract(ViewStorageCalls, LogQueryContract):
    """`ViewStorage`: view queries (lookups, order, blobs read with their rows); and
    `query` and `dump_views` asked directly."""


class TreeStorageContract(TreeStorageCalls):
    """`TreeStorage`: each tenant's transparency tree: heads, inclusion and consistency
    proofs checked by the suite's own RFC 9162 recursion, concurrent integrators, and
    ``extend_tree``'s guard asked directly."""


class StoresContract(
    CheckpointsContract,
    CheckpointsInputContract,
    CheckpointsTypedContract,
    CheckpointsThreadsContract,
    CheckpointsFencedContract,
    InterruptsContract,
    InterruptsAdminContract,
    InterruptsActorContract,
    InputEdgesContract,
):
    """What the checkpoint and interrupt stores need of the three contracts together:
    create, list, read and delete checkpoints and threads (fenced puts and writes
    included); create, claim, capture,
    effect, finish, cleanup, list, inspect, reconcile and recover interrupts (on a log
    opened with a fake clock); forged cursors and tokens refused."""


class KeyStorageContract(KeyStorageCalls):
    """`KeyStorage`: the rows of wrapped subject keys (encryption and erasure), asked of
    the backend directly."""


class ReplicaStorageContract(ReplicaStorageCalls):
    """`ReplicaStorage` (optional): a log opened with ``read_url`` reads from a hot
    standby caught up with the primary. Needs the hook ``replica_url(tmp_path)``."""


class BackendContract(
    EventStorageContract,
    BlobStorageContract,
    ViewStorageContract,
    TreeStorageContract,
    KeyStorageContract,
    StoresContract,
):
    """Every contract a storage backend must keep, as one pytest test class to subclass:
    `EventStorageContract`, `BlobStorageContract`, `ViewStorageContract`,
    `TreeStorageContract` and `StoresContract` (the optional `ReplicaStorageContract` is a
    subclass of its own).

    The tests open the backend only through `eventlog.open_log` (a backend registers its
    URL scheme with `eventlog.register_backend`) and use only what `open_log` gives back:
    the `EventLog` API, ``log.checkpoints``, ``log.interrupts``, ``log.verify()``,
    reopening the store (or opening it again with extra options: a fake clock, interrupt
    settings), and the backend itself as ``log.storage``, whose contract methods they ask
    directly about what the log wrote. The name has no ``Test`` prefix, so pytest
    collects it only through a subclass::

        from eventlog.testing import BackendContract

        import my_backend  # calls eventlog.register_backend("myscheme", factory)

        class TestMyBackend(BackendContract):
            persistent = True

            def backend_url(self, tmp_path):
                return f"myscheme://{tmp_path}/store"

    Or one subclass per contract (each with the same hooks), so a failure names the
    capability: ``class TestMyEvents(EventStorageContract)``, ``TestMyBlobs(
    BlobStorageContract)``, ``TestMyViews(ViewStorageContract)``, ``TestMyStores(
    StoresContract)``.

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
