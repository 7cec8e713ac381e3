"""The transparency tree contract: the stored nodes of each tenant's RFC 9162 tree.

The tree is derived data, like a view: its leaves are the tenant's events in gap-safe log
order (`EventStorage.read_all`), and everything stored here can be rebuilt from them. The
log's integrator (`eventlog.log._tree`) decides what to store; a backend keeps it and
guards it, so that two integrators of one tenant never both extend the same tree.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Sequence

from eventlog.merkle import EMPTY_TREE, Node, TreeExtension, TreeState
from eventlog.storage.contracts.lifecycle import StorageLifecycle

__all__ = ["EMPTY_TREE", "TreeExtension", "TreeState", "TreeStorage"]


class TreeStorage(StorageLifecycle):
    """The stored nodes of each tenant's transparency tree. Every method is a coroutine
    and reads or writes one tenant only. Nodes are written once and never changed."""

    @abc.abstractmethod
    async def tree_state(self, tenant_id: str) -> TreeState:
        """The tenant's stored tree state; `EMPTY_TREE` before anything was integrated."""

    @abc.abstractmethod
    async def tree_nodes(self, tenant_id: str, nodes: Sequence[Node]) -> dict[Node, bytes]:
        """The stored hashes of ``nodes`` (``(level, index)`` pairs), in one read; nodes
        not stored are left out."""

    @abc.abstractmethod
    async def tree_leaf(self, tenant_id: str, event_id: uuid.UUID) -> int | None:
        """The leaf index of the tenant's event ``event_id``; None if it was never
        integrated (another tenant's event is never found)."""

    @abc.abstractmethod
    async def extend_tree(self, tenant_id: str, old_size: int,
                          extension: TreeExtension) -> bool:
        """Store ``extension`` if the tenant's tree is still of ``old_size``; True if it was
        stored. In ONE transaction: the state moves from ``old_size`` to the extension's
        and its nodes and leaves are written, or nothing is. If another integrator moved
        the state first (the size is no longer ``old_size``), returns False and writes
        nothing; two concurrent calls from the same size never both return True."""

    @abc.abstractmethod
    async def replace_tree(self, tenant_id: str, expected: TreeState,
                           tree: TreeExtension) -> bool:
        """Replace the tenant's whole stored tree with ``tree`` (a tree built from no
        leaves: its state, every node, every leaf) if the stored tree is still of
        ``expected.size``; True if it was replaced. In ONE transaction: every stored node
        and leaf of the tenant is deleted and ``tree``'s written, or nothing changes. A
        ``tree`` of size 0 leaves the tenant with no stored tree (`EMPTY_TREE`). Used only
        to rebuild a damaged tree (`EventLog.rebuild_tree`); integrators extend."""
