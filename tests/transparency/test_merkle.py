"""The tree math (`eventlog.merkle`) against an independent RFC 9162 implementation."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from eventlog import merkle
from tests.transparency import rfc9162

LEAVES = [hashlib.sha256(bytes([i])).digest() for i in range(70)]


def stored(data: list[bytes], chunks: list[int]) -> dict[merkle.Node, bytes]:
    """The stored nodes of a tree built by appending ``data`` in chunks of these sizes."""
    nodes: dict[merkle.Node, bytes] = {}
    size = 0
    for chunk in [*chunks, len(data)]:
        part = data[size : size + chunk]
        nodes.update(merkle.new_nodes(size, [merkle.leaf_hash(d) for d in part], nodes))
        size += len(part)
    return nodes


def hashes(ranges: list[tuple[int, int]], nodes: dict[merkle.Node, bytes]) -> list[bytes]:
    return [merkle.range_hash(a, b, nodes) for a, b in ranges]


def test_empty_root_is_the_hash_of_nothing() -> None:
    """The tree of no leaves has the SHA-256 of the empty string as its root (RFC 9162)."""
    assert hashlib.sha256(b"").digest() == merkle.EMPTY_ROOT == merkle.root_of([])


def test_known_root_of_two_leaves() -> None:
    """Two leaves hash as 0x01 || H(0x00 || a) || H(0x00 || b)."""
    a, b = b"a" * 32, b"b" * 32
    expected = hashlib.sha256(b"\x01" + hashlib.sha256(b"\x00" + a).digest()
                              + hashlib.sha256(b"\x00" + b).digest()).digest()
    assert expected == merkle.root_of([merkle.leaf_hash(a), merkle.leaf_hash(b)])


@given(st.integers(1, 70), st.lists(st.integers(0, 9), max_size=5))
def test_stored_nodes_give_the_rfc_root(size: int, chunks: list[int]) -> None:
    """Nodes built in any chunking give MTH of the leaves, whatever the size."""
    data = LEAVES[:size]
    nodes = stored(data, chunks)
    assert rfc9162.mth(data) == merkle.range_hash(0, size, nodes)
    assert merkle.new_nodes(0, [merkle.leaf_hash(d) for d in data], {}) == nodes


@given(st.integers(1, 70).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1))))
def test_inclusion_path_is_rfc_path(case: tuple[int, int]) -> None:
    """PATH(m, D[n]) from stored nodes equals the RFC's recursion, and both verifiers accept it."""
    size, index = case
    data = LEAVES[:size]
    nodes = stored(data, [])
    path = hashes(merkle.inclusion_ranges(index, size), nodes)
    root = rfc9162.mth(data)
    assert rfc9162.path(index, data) == path
    assert rfc9162.inclusion_ok(rfc9162.leaf(data[index]), index, size, path, root)
    assert merkle.inclusion_holds(merkle.leaf_hash(data[index]), index, size, path, root)


@given(st.integers(1, 70).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_consistency_proof_is_rfc_proof(case: tuple[int, int]) -> None:
    """PROOF(m, D[n]) from stored nodes equals the RFC's recursion, and both verifiers accept it."""
    old, new = case
    data = LEAVES[:new]
    nodes = stored(data, [old])
    proof = hashes(merkle.consistency_ranges(old, new), nodes)
    old_root, new_root = rfc9162.mth(data[:old]), rfc9162.mth(data)
    assert rfc9162.proof(old, data) == proof
    assert rfc9162.consistency_ok(old, new, old_root, new_root, proof)
    assert merkle.consistency_holds(old, new, old_root, new_root, proof)


def test_a_forged_path_is_refused() -> None:
    """A path with one hash changed, one missing or one extra proves nothing."""
    data = LEAVES[:13]
    nodes = stored(data, [])
    root = rfc9162.mth(data)
    path = hashes(merkle.inclusion_ranges(5, 13), nodes)
    leaf = merkle.leaf_hash(data[5])
    forged = [path[0], bytes(32), *path[2:]]
    assert [False, False, False, False] == [
        merkle.inclusion_holds(leaf, 5, 13, forged, root),
        merkle.inclusion_holds(leaf, 5, 13, path[:-1], root),
        merkle.inclusion_holds(leaf, 5, 13, [*path, path[0]], root),
        merkle.inclusion_holds(leaf, 6, 13, path, root),
    ]


def test_a_rollback_or_a_fork_is_refused() -> None:
    """A consistency proof between a tree and one that is not its extension fails."""
    data = LEAVES[:20]
    nodes = stored(data, [])
    proof = hashes(merkle.consistency_ranges(7, 20), nodes)
    forked = [*LEAVES[:5], b"x" * 32, *LEAVES[6:20]]
    assert not merkle.consistency_holds(7, 20, rfc9162.mth(forked[:7]), rfc9162.mth(data), proof)
    assert not merkle.consistency_holds(20, 7, rfc9162.mth(data), rfc9162.mth(data[:7]), proof)
    assert not merkle.consistency_holds(7, 20, rfc9162.mth(data[:7]), rfc9162.mth(forked), proof)
    assert not merkle.consistency_holds(7, 20, rfc9162.mth(data[:7]), rfc9162.mth(data), [])


def test_a_proof_reads_few_nodes() -> None:
    """A proof in a tree of a million leaves needs at most 2 log2(n) stored nodes."""
    ranges = merkle.inclusion_ranges(777_777, 1_000_003)
    assert len(merkle.nodes_for(ranges)) <= 40
    assert len(merkle.nodes_for(merkle.consistency_ranges(333_333, 1_000_003))) <= 40
