"""Each tenant's transparency tree: the integrator that extends its stored nodes from the
log's gap-safe read side, and the heads and proofs read from them.

The append path does not touch the tree. `integrate` reads the tenant's events after the
stored tree's cursor with `read_all` (so a leaf's index is fixed only once its event is
gap-safe readable: on PostgreSQL no event that commits later is ever placed before it),
hashes them into the perfect subtrees they complete and stores them with one
`extend_tree`, guarded by the size it started from: of two integrators racing, one
stores and the other reads the stored state again. A writer never waits for it.
A head or a proof reads O(log n) stored nodes (`eventlog.merkle.nodes_for`).

`rebuild` replaces a damaged stored tree with the one the events give, in one
transaction, and refuses to when that would hide a rewrite of the log (see its docstring).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from eventlog.errors import (
    ForgedEvent,
    InvalidInput,
    TreeDamaged,
    TreeMismatch,
    TreeRebuildRefused,
)
from eventlog.log._signed import signature_finding
from eventlog.merkle import (
    EMPTY_ROOT,
    InclusionProof,
    Node,
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
from eventlog.writer_keys import WriterKeys

PAGE = 2_000
"""Events integrated per stored extension."""
REBUILD_TRIES = 5
"""Times a rebuild reads the log again when an integrator extended the tree meanwhile."""


@dataclass
class TreeFinding:
    """What `check_tree` found wrong: a ``kind`` (``cut``, ``rewritten``, ``node``) and what."""

    kind: str
    detail: str


@dataclass(frozen=True)
class TreeRebuild:
    """What `EventLog.rebuild_tree` did: the rebuilt tree's ``size`` and ``root``; the
    stored tree's size before (``old_size``); ``repaired``, how many nodes of the old
    tree were wrong or missing; ``discarded``, what the stored tree said that the
    events did not, set aside because ``accept_new_root`` was given (empty otherwise)."""

    size: int
    root: bytes
    old_size: int
    repaired: int
    discarded: tuple[TreeFinding, ...] = ()


@dataclass(frozen=True)
class _Checked:
    """A tree head this process checked against the events: its size, the `read_all`
    cursor after its last leaf's event, and its perfect subtrees' hashes (all a later
    check needs to hash only the leaves added since)."""

    size: int
    cursor: str | None
    frontier: dict[Node, bytes]


def perfect_nodes(size: int) -> list[Node]:
    """Every perfect subtree of a tree of ``size`` leaves, level by level."""
    nodes: list[Node] = []
    level = 0
    while size >> level:
        nodes += [(level, index) for index in range(size >> level)]
        level += 1
    return nodes


class Tree:
    """The transparency trees of one backend's tenants."""

    def __init__(self, storage: StorageBackend, keys: WriterKeys | None = None,
                 starts: dict[str, int] | None = None) -> None:
        self.storage = storage
        self.keys = keys
        self.starts = {} if starts is None else starts
        """Each tenant's first signed position once found (the log's, shared)."""
        self.checked: dict[str, _Checked] = {}
        """Each tenant's last head checked against its events, in this process (kept in
        memory, where the database administrator cannot reach it)."""

    async def integrate(self, tenant_id: str) -> TreeState:
        """Extend the tenant's stored tree over every event readable now; its new state.

        With writer keys known, an event the writer key did not sign
        (`signature_finding`: forged, or unsigned past the tenant's first signed event) is
        not taken in: `ForgedEvent`, and the tree stops before it, so no head the operator
        signs covers a row the administrator wrote. (A leaf has no stream context here:
        an unsigned row placed before the first signed event is `verify`'s to name.)"""
        storage = self.storage
        state = await storage.tree_state(tenant_id)
        asked: list[int | None] = []  # the tenant's signing start, asked once a call
        while True:
            events, cursor = await storage.read_all(state.cursor, PAGE, tenant_id)
            if not events:
                return state
            if self.keys is not None:
                await self._refuse_forged(tenant_id, events, asked)
            frontier = await self._nodes(tenant_id, perfect_subtrees(0, state.size))
            nodes = new_nodes(state.size, [leaf_hash(e.hash) for e in events], frontier)
            leaves = [(e.event_id, state.size + i) for i, e in enumerate(events)]
            grown = TreeState(state.size + len(events), cursor)
            if not await storage.extend_tree(tenant_id, state.size,
                                             TreeExtension(grown, nodes, leaves)):
                grown = await storage.tree_state(tenant_id)  # another integrator was first
            state = grown

    async def _refuse_forged(self, tenant_id: str, events: list[StoredEvent],
                             asked: list[int | None]) -> None:
        for event in events:
            if event.signature is None and not asked:
                start = self.starts.get(tenant_id)
                if start is None:
                    start = (await self.storage.signing_starts(tenant_id)).get(tenant_id)
                    if start is not None:
                        self.starts[tenant_id] = start
                asked.append(start)
            found = signature_finding(self.keys, event, signed_before=False,
                                      start=asked[0] if asked else None)
            if found is not None:
                raise ForgedEvent(tenant_id, event.stream_id, event.version, *found)

    async def head(self, tenant_id: str) -> TreeHead:
        """The head of the tenant's integrated tree, checked against its events first
        (`TreeMismatch` when the stored tree is not theirs): what an operator signs."""
        state = await self.integrate(tenant_id)
        root = await self.root(tenant_id, state.size)
        await self._check_head(tenant_id, state.size, root)
        return TreeHead(state.size, root)

    async def _check_head(self, tenant_id: str, size: int, root: bytes) -> None:
        """`TreeMismatch` unless ``root`` is the root of the tenant's first ``size`` events:
        checked from the last head this process checked and, before refusing, once more
        from the first leaf after every committed event is readable (a head whose leaves
        the integrator read just before this read's horizon, or a continuation cursor that
        an older transaction's late commit sorts behind, is not a mismatch)."""
        known = self.checked.get(tenant_id)
        if known is not None and size < known.size:
            raise TreeMismatch(tenant_id, f"it holds {size} leaves, fewer than the "
                                          f"{known.size} of a head checked before")
        try:
            await self._check_head_from(tenant_id, size, root, known)
        except TreeMismatch:
            await self.storage.wait_readable(30.0)
            self.checked.pop(tenant_id, None)
            await self._check_head_from(tenant_id, size, root, None)

    async def _check_head_from(self, tenant_id: str, size: int, root: bytes,
                               known_head: _Checked | None) -> None:
        """`TreeMismatch` unless ``root`` is the root of the tenant's first ``size`` events.

        The stored tree is derived data the database administrator can write: a tree
        state of 15 leaves over 10 events, or leaves of events that are not the log's,
        would otherwise be signed as the log's head. The leaves added since the last head
        this process checked (all of them, in a new process) are read from the events
        (`read_all`, exactly as many as the head covers) and hashed onto that head's
        frontier; the root they give must be the stored one."""
        known = known_head or _Checked(0, None, {})
        if size < known.size:
            raise TreeMismatch(tenant_id, f"it holds {size} leaves, fewer than the "
                                          f"{known.size} of a head checked before")
        leaves: list[bytes] = []
        cursor = known.cursor
        while len(leaves) < size - known.size:
            wanted = min(PAGE, size - known.size - len(leaves))
            page, cursor = await self.storage.read_all(cursor, wanted, tenant_id)
            if not page:
                raise TreeMismatch(tenant_id, f"it holds {size} leaves, the log "
                                              f"{known.size + len(leaves)} events of the "
                                              "tenant")
            leaves += [leaf_hash(e.hash) for e in page]
        nodes = {**known.frontier, **new_nodes(known.size, leaves, known.frontier)}
        if size and range_hash(0, size, nodes) != root:
            raise TreeMismatch(tenant_id, f"its root over {size} leaves is not the root "
                                          "the events give")
        frontier = {node: nodes[node] for node in perfect_subtrees(0, size)}
        self.checked[tenant_id] = _Checked(size, cursor, frontier)

    async def root(self, tenant_id: str, size: int) -> bytes:
        """The root of the tenant's stored tree of ``size`` (at most its integrated size)."""
        if size == 0:
            return EMPTY_ROOT
        nodes = await self._nodes(tenant_id, perfect_subtrees(0, size))
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
        stored = await self._nodes(tenant_id, nodes_for(ranges))
        return [range_hash(start, end, stored) for start, end in ranges]

    async def _nodes(self, tenant_id: str, wanted: list[Node]) -> Mapping[Node, bytes]:
        """The stored nodes ``wanted``; `TreeDamaged` naming the first one missing."""
        stored = await self.storage.tree_nodes(tenant_id, wanted)
        for level, index in wanted:
            if (level, index) not in stored:
                raise TreeDamaged(tenant_id, level, index)
        return stored

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
        leaves, events, _ = await self._read_leaves(tenant_id)
        return leaves, events

    async def _read_leaves(self, tenant_id: str
                           ) -> tuple[list[bytes], list[StoredEvent], str | None]:
        """The tenant's leaves and events readable now, and the cursor after the last."""
        leaves: list[bytes] = []
        events: list[StoredEvent] = []
        cursor: str | None = None
        last: str | None = None
        while True:
            page, cursor = await self.storage.read_all(cursor, PAGE, tenant_id)
            if not page:
                return leaves, events, last
            last = cursor
            events += page
            leaves += [leaf_hash(e.hash) for e in page]

    async def rebuild(self, tenant_id: str, heads: tuple[TreeHead, ...],
                      accept_new_root: bool) -> TreeRebuild:
        """Replace the tenant's stored tree with the tree of its events readable now.

        Refused (`TreeRebuildRefused`, nothing written) when the events no longer give a
        kept head's root: nothing overrides that. Refused too, unless ``accept_new_root``,
        when the stored tree is evidence against the events: it holds more leaves than
        the tenant has events (a cut), or a stored leaf differs from its event's while the
        stored tree's root is not the events' (a rewrite after integration, or damage
        that cannot be told from one); or when there is no evidence left to check them
        against: a stored leaf past every kept head is missing (or no tree is stored at
        all) and no stored root the events give vouches for it. Damage the events
        contradict is repaired: a node
        that is not the hash of its leaves, a missing node, a stored leaf whose tree's
        root the events still give.
        """
        for _ in range(REBUILD_TRIES):
            state = await self.storage.tree_state(tenant_id)
            leaves, events, cursor = await self._read_leaves(tenant_id)
            contradicted: list[TreeFinding] = []
            for head in heads:
                contradicted += await self._against_head(tenant_id, head, leaves, events)
            if contradicted:
                raise TreeRebuildRefused(tenant_id, [(f.kind, f.detail) for f in contradicted],
                                         overridable=False)
            old_nodes = perfect_nodes(state.size)
            stored = await self.storage.tree_nodes(tenant_id, old_nodes)
            vouched = max((head.size for head in heads), default=0)  # each holds
            evidence = self._evidence(state.size, stored, leaves, events, vouched)
            if evidence and not accept_new_root:
                raise TreeRebuildRefused(tenant_id, [(f.kind, f.detail) for f in evidence],
                                         overridable=True)
            nodes = new_nodes(0, leaves, {})
            rebuilt = TreeExtension(TreeState(len(leaves), cursor), nodes,
                                    [(e.event_id, i) for i, e in enumerate(events)])
            if await self.storage.replace_tree(tenant_id, state, rebuilt):
                self.checked.pop(tenant_id, None)  # the tree checked before is replaced
                return TreeRebuild(len(leaves), root_of(leaves), state.size,
                                   sum(stored.get(node) != nodes.get(node) for node in old_nodes),
                                   tuple(evidence))
        raise TreeRebuildRefused(tenant_id, [("busy", f"integrators extended the tree "
                                              f"{REBUILD_TRIES} times while it was rebuilt; "
                                              "try again")], overridable=False)

    def _evidence(self, size: int, stored: dict[Node, bytes], leaves: list[bytes],
                  events: list[StoredEvent], vouched: int) -> list[TreeFinding]:
        """What the stored tree of ``size`` says that the events contradict, as evidence
        of the log changing (not of the tree's damage), or that leaves past ``vouched``
        (the largest kept head, which the events still give) cannot be checked at all: a
        missing stored leaf is no evidence for its event, so without a stored root the
        events give it is ``unchecked`` (a tree whose rows were deleted proves nothing)."""
        if len(leaves) < size:
            return [TreeFinding("cut", f"the stored tree holds {size} leaves, the log only "
                                       f"{len(leaves)} events of the tenant: "
                                       f"{size - len(leaves)} were cut after they were "
                                       "integrated")]
        if size == 0:
            return [] if len(leaves) <= vouched else [TreeFinding("unchecked", (
                f"no stored tree is left to check the tenant's {len(leaves)} events against "
                f"(a kept head covers {vouched}): the rebuilt root cannot be checked against "
                "evidence"))]
        differing = [i for i in range(size) if (0, i) in stored and stored[(0, i)] != leaves[i]]
        missing = [i for i in range(vouched, size) if (0, i) not in stored]
        if not differing and not missing:
            return []  # the events are the leaves integrated: only the nodes above are wrong
        frontier = perfect_subtrees(0, size)
        top = range_hash(0, size, stored) if all(n in stored for n in frontier) else None
        if top == root_of(leaves[:size]):
            return []  # the stored root is the events': the stored leaves are what broke
        if not differing:
            first = missing[0]
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            return [TreeFinding("unchecked", (
                f"the stored tree's leaf {first} (event {events[first].event_id}){more} is "
                f"missing and its root {'is missing' if top is None else 'is not the events'}"
                ": the rebuilt root cannot be checked against evidence"))]
        first = differing[0]
        more = f" and {len(differing) - 1} more" if len(differing) > 1 else ""
        stored_leaves = [stored.get((0, i), leaves[i]) for i in range(size)]
        why = ("its nodes agree with those leaves, so the events were rewritten after they "
               "were integrated" if top == root_of(stored_leaves) else
               "its root agrees with neither, so a rewrite cannot be told from damage")
        return [TreeFinding("rewritten", f"the stored tree's leaf {first} (event "
                                         f"{events[first].event_id}){more} is not the hash of "
                                         f"the event the log holds there, and {why}")]

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
