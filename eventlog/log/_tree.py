"""Each tenant's transparency tree: the integrator that extends its stored nodes from the
log's gap-safe read side, and the heads and proofs read from them.

The append path does not touch the tree. `integrate` reads the tenant's events after the
stored tree's cursor with `read_all` (so a leaf's index is fixed only once its event is
gap-safe readable: on PostgreSQL no event that commits later is ever placed before it),
hashes them into the perfect subtrees they complete and stores them with one
`extend_tree`, guarded by the size it started from: of two integrators racing, one
stores and the other reads the stored state again. A writer never waits for it.
A head or a proof reads O(log n) stored nodes (`eventlog.merkle.nodes_for`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from eventlog.errors import InvalidInput
from eventlog.merkle import (
    EMPTY_ROOT,
    InclusionProof,
    TreeHead,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    new_nodes,
    nodes_for,
    perfect_subtrees,
    range_hash,
    root_of,
)
from eventlog.records import StoredEvent
from eventlog.storage.base import StorageBackend
from eventlog.storage.contracts import TreeExtension, TreeState

PAGE = 2_000
"""Events integrated per stored extension."""


@dataclass
class TreeFinding:
    """What `check_tree` found wrong: a ``kind`` (``cut``, ``rewritten``, ``node``) and what."""

    kind: str
    detail: str


class Tree:
    """The transparency trees of one backend's tenants."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    async def integrate(self, tenant_id: str) -> TreeState:
        """Extend the tenant's stored tree over every event readable now; its new state."""
        storage = self.storage
        state = await storage.tree_state(tenant_id)
        while True:
            events, cursor = await storage.read_all(state.cursor, PAGE, tenant_id)
            if not events:
                return state
            frontier = await storage.tree_nodes(tenant_id, perfect_subtrees(0, state.size))
            nodes = new_nodes(state.size, [leaf_hash(e.hash) for e in events], frontier)
            leaves = [(e.event_id, state.size + i) for i, e in enumerate(events)]
            grown = TreeState(state.size + len(events), cursor)
            if not await storage.extend_tree(tenant_id, state.size,
                                             TreeExtension(grown, nodes, leaves)):
                grown = await storage.tree_state(tenant_id)  # another integrator was first
            state = grown

    async def head(self, tenant_id: str) -> TreeHead:
        state = await self.integrate(tenant_id)
        return TreeHead(state.size, await self.root(tenant_id, state.size))

    async def root(self, tenant_id: str, size: int) -> bytes:
        """The root of the tenant's stored tree of ``size`` (at most its integrated size)."""
        if size == 0:
            return EMPTY_ROOT
        nodes = await self.storage.tree_nodes(tenant_id, perfect_subtrees(0, size))
        return range_hash(0, size, nodes)

    async def inclusion(self, tenant_id: str, event_id: uuid.UUID,
                        size: int) -> InclusionProof | None:
        await self._covering(tenant_id, size, "size")
        index = await self.storage.tree_leaf(tenant_id, event_id)
        if index is None or index >= size:
            return None
        return InclusionProof(index, size, tuple(await self._hashes(
            tenant_id, inclusion_ranges(index, size))))

    async def consistency(self, tenant_id: str, old_size: int, new_size: int) -> list[bytes]:
        if old_size > new_size:
            raise InvalidInput("old_size", f"is {old_size}, larger than new_size ({new_size})")
        await self._covering(tenant_id, new_size, "new_size")
        return await self._hashes(tenant_id, consistency_ranges(old_size, new_size))

    async def _covering(self, tenant_id: str, size: int, field: str) -> TreeState:
        """The tree's state, integrated if it is smaller than ``size``; `InvalidInput` if
        the tenant's tree has fewer than ``size`` leaves even then."""
        state = await self.storage.tree_state(tenant_id)
        if state.size < size:
            state = await self.integrate(tenant_id)
        if size > state.size:
            raise InvalidInput(field, f"is {size}, but the tenant's tree has {state.size} "
                                      "leaves")
        return state

    async def _hashes(self, tenant_id: str, ranges: list[tuple[int, int]]) -> list[bytes]:
        stored = await self.storage.tree_nodes(tenant_id, nodes_for(ranges))
        return [range_hash(start, end, stored) for start, end in ranges]

    async def check(self, tenant_id: str, head: TreeHead | None) -> list[TreeFinding]:
        """Recompute the tenant's tree from its events: that the first ``head.size`` leaves
        give ``head.root`` (naming a cut or a rewrite), and that every stored node of the
        integrated tree is the hash its leaves give."""
        leaves, events = await self._leaves(tenant_id)
        findings: list[TreeFinding] = []
        if head is not None:
            findings += await self._against_head(tenant_id, head, leaves, events)
        state = await self.storage.tree_state(tenant_id)
        findings += await self._stored_nodes(tenant_id, leaves[: state.size], events)
        return findings

    async def _leaves(self, tenant_id: str) -> tuple[list[bytes], list[StoredEvent]]:
        leaves: list[bytes] = []
        events: list[StoredEvent] = []
        cursor: str | None = None
        while True:
            page, cursor = await self.storage.read_all(cursor, PAGE, tenant_id)
            if not page:
                return leaves, events
            events += page
            leaves += [leaf_hash(e.hash) for e in page]

    async def _against_head(self, tenant_id: str, head: TreeHead, leaves: list[bytes],
                            events: list[StoredEvent]) -> list[TreeFinding]:
        if len(leaves) < head.size:
            return [TreeFinding("cut", f"the head is of {head.size} events, the log holds "
                                       f"only {len(leaves)} of the tenant: "
                                       f"{head.size - len(leaves)} were cut")]
        if root_of(leaves[: head.size]) == head.root:
            return []
        stored = await self.storage.tree_nodes(tenant_id, [(0, i) for i in range(head.size)])
        for index, leaf in enumerate(leaves[: head.size]):
            if stored.get((0, index), leaf) != leaf:
                return [TreeFinding("rewritten", f"the log's first {head.size} events do not "
                                    f"give the head's root: leaf {index} (event "
                                    f"{events[index].event_id}) changed since it was "
                                    "integrated")]
        return [TreeFinding("rewritten", f"the log's first {head.size} events do not give the "
                                         "head's root: events were rewritten or reordered")]

    async def _stored_nodes(self, tenant_id: str, leaves: list[bytes],
                            events: list[StoredEvent]) -> list[TreeFinding]:
        expected = new_nodes(0, leaves, {})
        stored = await self.storage.tree_nodes(tenant_id, sorted(expected))
        for node in sorted(expected):
            if stored.get(node) != expected[node]:
                level, index = node
                event = events[index << level].event_id
                return [TreeFinding("node", f"the stored tree's node (level {level}, index "
                                            f"{index}, from event {event}) is not the hash "
                                            "of its events")]
        return []
