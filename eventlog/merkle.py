"""The Merkle tree math of RFC 9162 §2.1, written once, with no I/O.

A tree over leaves ``D[0:n]``: the hash of one leaf is ``SHA-256(0x00 || leaf)``, of an
interior node ``SHA-256(0x01 || left || right)``; a tree of ``n > 1`` leaves splits at
``k``, the largest power of two below ``n`` (`split`). The log's leaves are each tenant's
events in gap-safe log order, a leaf's data the event's stored chain hash.

Stored trees keep only *perfect* subtrees: the node ``(level, index)`` is the hash of the
``2**level`` leaves from ``index * 2**level``, written once when its last leaf arrives and
never changed. Every hash a head or a proof needs is the hash of a range ``[start, end)``
that RFC 9162's recursion makes, and such a range is a few perfect subtrees
(`perfect_subtrees`), so a head or a proof reads O(log n) stored nodes. The checks an
auditor runs (`inclusion_holds`, `consistency_holds`) are the RFC's verification
algorithms (§2.1.3.2, §2.1.4.2). Nothing here opens a database or loads a key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The root of the tree of no leaves (RFC 9162: the hash of the empty string)."""

Node = tuple[int, int]
"""A perfect subtree, ``(level, index)``: the ``2**level`` leaves from ``index * 2**level``."""

__all__ = [
    "EMPTY_ROOT", "EMPTY_TREE", "HASH_SIZE", "InclusionProof", "Node", "TreeExtension",
    "TreeHead", "TreeState", "consistency_holds", "consistency_ranges",
    "inclusion_holds", "inclusion_ranges", "leaf_hash", "new_nodes", "node_hash", "nodes_for",
    "perfect_subtrees", "range_hash", "root_of", "split",
]


@dataclasses.dataclass(frozen=True)
class TreeHead:
    """A tree of ``size`` leaves and its ``root`` (32 bytes)."""

    size: int
    root: bytes


@dataclasses.dataclass(frozen=True)
class InclusionProof:
    """PATH(leaf_index, D[0:size]): the hashes, leaf first, that lead from leaf
    ``leaf_index`` to the root of the tree of ``size``."""

    leaf_index: int
    size: int
    path: tuple[bytes, ...]


@dataclasses.dataclass(frozen=True)
class TreeState:
    """How far a tenant's stored tree reaches: its ``size`` (leaves integrated) and the
    `read_all` cursor after its last leaf (None before the first)."""

    size: int
    cursor: str | None


EMPTY_TREE = TreeState(0, None)
"""The state of a tenant's tree before anything was integrated."""


@dataclasses.dataclass(frozen=True)
class TreeExtension:
    """What integrating more leaves adds: the new state, every perfect subtree the new
    leaves complete (`eventlog.merkle.new_nodes`), and each new leaf's event id and index."""

    state: TreeState
    nodes: Mapping[Node, bytes]
    leaves: Sequence[tuple[uuid.UUID, int]]



def leaf_hash(data: bytes) -> bytes:
    """RFC 9162's hash of a leaf: ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162's hash of an interior node: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n ≥ 2): where a tree of n leaves splits."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of(leaf_hashes: Sequence[bytes]) -> bytes:
    """The root of the tree over ``leaf_hashes`` (already leaf-hashed), computed in memory."""
    if not leaf_hashes:
        return EMPTY_ROOT
    level = list(leaf_hashes)
    # Pairing left to right and carrying an odd last node up gives RFC 9162's tree: its
    # split puts the largest perfect subtree on the left at every level.
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def perfect_subtrees(start: int, end: int) -> list[Node]:
    """The perfect subtrees that make up the range ``[start, end)``, left to right.

    ``start`` is a multiple of the largest power of two not above ``end - start``, as every
    range of RFC 9162's recursion is: the range is its leaves' binary digits, largest first.
    """
    nodes: list[Node] = []
    at = start
    remaining = end - start
    while remaining:
        level = remaining.bit_length() - 1
        nodes.append((level, at >> level))
        at += 1 << level
        remaining -= 1 << level
    return nodes


def range_hash(start: int, end: int, stored: Mapping[Node, bytes]) -> bytes:
    """MTH(D[start:end]) from the stored hashes of its `perfect_subtrees` (all present)."""
    hashes = [stored[node] for node in perfect_subtrees(start, end)]
    folded = hashes[-1]
    for left in reversed(hashes[:-1]):
        folded = node_hash(left, folded)
    return folded


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The ranges whose hashes are PATH(index, D[0:size]) (RFC 9162 §2.1.3.1), leaf first."""
    ranges: list[tuple[int, int]] = []
    start, end = 0, size
    while end - start > 1:
        k = split(end - start)
        if index - start < k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    ranges.reverse()
    return ranges


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The ranges whose hashes are PROOF(old, D[0:new]) (RFC 9162 §2.1.4.1); none when
    ``old`` is 0 or equal to ``new``."""
    if old == 0 or old == new:
        return []
    ranges: list[tuple[int, int]] = []
    start, end, whole = 0, new, True
    while True:
        if old - start == end - start:
            if not whole:
                ranges.append((start, end))
            break
        k = split(end - start)
        if old - start <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
            whole = False
    ranges.reverse()
    return ranges


def new_nodes(size: int, leaves: Sequence[bytes],
              stored: Mapping[Node, bytes]) -> dict[Node, bytes]:
    """The perfect subtrees completed by appending ``leaves`` (leaf-hashed) to a tree of
    ``size``, with their hashes; ``stored`` holds at least the old tree's
    ``perfect_subtrees(0, size)``, the only old nodes a new one can rest on."""
    made: dict[Node, bytes] = {}

    def get(node: Node) -> bytes:
        return made[node] if node in made else stored[node]

    for offset, leaf in enumerate(leaves):
        index = size + offset
        made[(0, index)] = leaf
        level = 0
        while (index + 1) % (2 << level) == 0:
            parent = index >> (level + 1)
            made[(level + 1, parent)] = node_hash(get((level, 2 * parent)),
                                                  get((level, 2 * parent + 1)))
            level += 1
    return made


def inclusion_holds(leaf: bytes, index: int, size: int, path: Sequence[bytes],
                    root: bytes) -> bool:
    """Whether ``path`` proves the leaf hash ``leaf`` is leaf ``index`` of the tree of
    ``size`` with ``root`` (RFC 9162 §2.1.3.2)."""
    if not 0 <= index < size or not _hashes(path, leaf, root):
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def consistency_holds(old_size: int, new_size: int, old_root: bytes, new_root: bytes,
                      proof: Sequence[bytes]) -> bool:
    """Whether ``proof`` proves the tree of ``old_size`` with ``old_root`` is a prefix of
    the tree of ``new_size`` with ``new_root`` (RFC 9162 §2.1.4.2; equal sizes need an
    empty proof and equal roots, and every tree extends the empty one)."""
    if not 0 <= old_size <= new_size or not _hashes(proof, old_root, new_root):
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof and old_root == EMPTY_ROOT
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is a node of the path
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


def _hashes(values: Iterable[bytes], *more: bytes) -> bool:
    return all(isinstance(v, bytes) and len(v) == HASH_SIZE for v in (*values, *more))


def nodes_for(ranges: Iterable[tuple[int, int]]) -> list[Node]:
    """Every perfect subtree the hashes of ``ranges`` need, sorted, each once."""
    return sorted({node for start, end in ranges for node in perfect_subtrees(start, end)})
