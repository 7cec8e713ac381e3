"""An independent RFC 9162 §2.1 implementation, written from the RFC's recursive
definitions for the tests: MTH, PATH and PROOF over the whole list of leaves, and
verification by rebuilding the root the proof claims (not the RFC's bit-walking
algorithm that `eventlog.merkle` uses). It imports nothing of the code under test."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf(data: bytes) -> bytes:
    return sha(b"\x00" + data)


def interior(left: bytes, right: bytes) -> bytes:
    return sha(b"\x01" + left + right)


def k_of(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of the leaves' data."""
    if not d:
        return sha(b"")
    if len(d) == 1:
        return leaf(d[0])
    k = k_of(len(d))
    return interior(mth(d[:k]), mth(d[k:]))


def path(m: int, d: Sequence[bytes]) -> list[bytes]:
    """PATH(m, D[n])."""
    if len(d) <= 1:
        return []
    k = k_of(len(d))
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def proof(m: int, d: Sequence[bytes]) -> list[bytes]:
    """PROOF(m, D[n])."""
    return _subproof(m, d, True) if 0 < m < len(d) else []


def _subproof(m: int, d: Sequence[bytes], whole: bool) -> list[bytes]:
    if m == len(d):
        return [] if whole else [mth(d)]
    k = k_of(len(d))
    if m <= k:
        return [*_subproof(m, d[:k], whole), mth(d[k:])]
    return [*_subproof(m - k, d[k:], False), mth(d[:k])]


def root_from_path(leaf_hash: bytes, index: int, size: int,
                   hashes: Sequence[bytes]) -> bytes | None:
    """The root a PATH claims, rebuilt by the RFC's recursion (None if the path's length
    does not fit the tree's shape)."""
    rest = list(hashes)

    def walk(i: int, n: int) -> bytes | None:
        if n == 1:
            return leaf_hash
        k = k_of(n)
        below = walk(i, k) if i < k else walk(i - k, n - k)
        if below is None or not rest:
            return None
        sibling = rest.pop(0)
        return interior(below, sibling) if i < k else interior(sibling, below)

    if not 0 <= index < size:
        return None
    root = walk(index, size)
    return root if root is not None and not rest else None


def inclusion_ok(leaf_hash: bytes, index: int, size: int, hashes: Sequence[bytes],
                 root: bytes) -> bool:
    return root_from_path(leaf_hash, index, size, hashes) == root


def consistency_ok(old: int, new: int, old_root: bytes, new_root: bytes,
                   hashes: Sequence[bytes]) -> bool:
    """Rebuild both roots from PROOF(old, new)'s hashes by the RFC's recursion."""
    if old == new:
        return not hashes and old_root == new_root
    if old == 0:
        return not hashes
    if not 0 < old < new:
        return False
    rest = list(hashes)

    def take() -> bytes | None:
        return rest.pop(0) if rest else None

    def walk(m: int, n: int, whole: bool) -> tuple[bytes, bytes] | None:
        # (hash of the old tree's part in D[0:n], hash of D[0:n]) for SUBPROOF(m, D[n], whole)
        if m == n:
            if whole:
                return old_root, old_root
            h = take()
            return None if h is None else (h, h)
        k = k_of(n)
        if m <= k:
            inner = walk(m, k, whole)
            right = take()
            if inner is None or right is None:
                return None
            return inner[0], interior(inner[1], right)
        inner = walk(m - k, n - k, False)
        left = take()
        if inner is None or left is None:
            return None
        return interior(left, inner[0]), interior(left, inner[1])

    got = walk(old, new, True)
    return got is not None and not rest and got == (old_root, new_root)
