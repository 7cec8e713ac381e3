"""The storage contracts (`eventlog.storage.contracts`): each fully abstract, a backend
the composition of those it implements, and a backend that leaves a method unwritten
refused when it is built, not when the method is first called."""

from __future__ import annotations

import abc
import inspect
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from eventlog.storage.base import StorageBackend
from eventlog.storage.citus import CitusBackend
from eventlog.storage.contracts import (
    BlobStorage,
    ConsumerStorage,
    EventStorage,
    KeyStorage,
    ReplicaStorage,
    StorageLifecycle,
    TreeStorage,
    ViewsRebuiltOnOpen,
    ViewStorage,
)
from eventlog.storage.files import FileBackend
from eventlog.storage.memory import MemoryBackend
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import SqliteBackend
from tests.events import Noted

CONTRACTS = [StorageLifecycle, EventStorage, BlobStorage, ViewStorage, TreeStorage,
             KeyStorage, ConsumerStorage, ReplicaStorage, ViewsRebuiltOnOpen]


def own_methods(contract: type) -> set[str]:
    """The public methods a class defines itself."""
    return {name for name, value in vars(contract).items()
            if not name.startswith("_") and inspect.isfunction(value)}


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.__name__)
def test_every_method_of_a_contract_is_abstract(contract: type) -> None:
    """No contract carries a default: each method it defines is abstract."""
    assert own_methods(contract)
    assert own_methods(contract) <= contract.__abstractmethods__  # type: ignore[attr-defined]


def test_storage_backend_is_the_six_contracts_and_nothing_more() -> None:
    """What open_log needs is the events, blobs, views, transparency tree, subject keys and
    consumers contracts' methods, together."""
    needed = set().union(*(c.__abstractmethods__ for c in (
        EventStorage, BlobStorage, ViewStorage, TreeStorage, KeyStorage, ConsumerStorage)))
    assert (set(), needed) == (own_methods(StorageBackend), StorageBackend.__abstractmethods__)


BUILT_IN = {
    MemoryBackend: set(),
    FileBackend: {ViewsRebuiltOnOpen},
    SqliteBackend: set(),
    PostgresBackend: {ReplicaStorage},
    CitusBackend: {ReplicaStorage},
}


@pytest.mark.parametrize("backend", list(BUILT_IN), ids=lambda c: c.__name__)
def test_each_built_in_backend_implements_exactly_its_contracts(backend: type) -> None:
    """Every built-in backend is a StorageBackend with no method left unwritten, plus
    the optional contracts it declares and no other."""
    optional = {c for c in (ReplicaStorage, ViewsRebuiltOnOpen) if issubclass(backend, c)}
    assert (True, frozenset(), BUILT_IN[backend]) == (
        issubclass(backend, StorageBackend), backend.__abstractmethods__, optional)


def test_a_backend_missing_a_method_cannot_be_built() -> None:
    """A backend that writes every method but ``blob_refs_page`` is refused when built,
    naming the method (the single contract's default used to fail only in verify)."""
    methods: dict[str, Any] = {name: lambda *a, **k: None
                               for name in StorageBackend.__abstractmethods__}
    del methods["blob_refs_page"]
    partial = abc.ABCMeta("Partial", (StorageBackend,), methods)
    with pytest.raises(TypeError, match="blob_refs_page"):
        partial()


async def test_only_a_backend_that_rebuilds_views_has_them_rebuilt(tmp_path: Path) -> None:
    """open_log folds the events into the views of a `ViewsRebuiltOnOpen` backend when it
    opens (the file store's views come back), and leaves other backends' views alone."""
    url = f"file://{tmp_path / 'store'}"
    async with open_log(url) as log:
        await log.append("t", "s", [Noted(text="a")])
        before = await log.dump_views()
    async with open_log(url) as log:
        assert before == await log.dump_views()
    async with open_log("memory://") as log:
        assert not isinstance(log.storage, ViewsRebuiltOnOpen)
