"""`ChainFolds`: many element-stored values resolved over one set of blobs, each chain
manifest decoded once and each chain suffix folded once, give exactly what folding each
value's own chain alone gives: for any chains (a thread's, forks, chains that name
manifests whose own chains say otherwise, missing or damaged manifests)."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.checkpoints import elements
from eventlog.checkpoints.elements import ChainFolds, Manifest, ManifestCache

_encode = elements._encoder.encode


def _one_by_one(manifest: Manifest, blobs: dict[bytes, bytes]
                ) -> list[tuple[str, bytes]] | None:
    """The fold as it was: every manifest of the value's own chain decoded and applied,
    farthest first."""
    steps = [manifest]
    for digest in manifest.chain:
        data = blobs.get(digest)
        found = None if data is None else elements.decode_manifest(data)
        if found is None:
            return None
        steps.append(found)
    items: list[tuple[str, bytes]] = []
    for step in reversed(steps):
        items = items[:step.keep] + list(step.add)
    return items


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@st.composite
def _manifests(draw: st.DrawFn) -> tuple[dict[bytes, bytes], list[Manifest]]:
    """Stored manifests, each a delta on an earlier one (its chain: the base, then the
    base's chain, sometimes cut or altered) or full; some stored damaged or not at all;
    and manifests to resolve on top of them."""
    blobs: dict[bytes, bytes] = {}
    made: list[tuple[bytes, Manifest]] = []
    for number in range(draw(st.integers(1, 25))):
        add = [("json", _digest(f"{number}.{n}".encode()))
               for n in range(draw(st.integers(0, 3)))]
        chain: list[bytes] = []
        if made and draw(st.booleans()):
            base_digest, base = made[draw(st.integers(0, len(made) - 1))]
            chain = [base_digest, *base.chain]
            if draw(st.integers(0, 9)) == 0:
                chain = chain[:draw(st.integers(1, len(chain)))]  # a chain cut short
        manifest = Manifest(chain=chain, keep=draw(st.integers(0, 8)), add=add)
        data = _encode(manifest)
        digest = _digest(data)
        fate = draw(st.integers(0, 19))
        if fate == 0:
            blobs[digest] = b"\xc1 not a manifest"
        elif fate != 1:
            blobs[digest] = data
        made.append((digest, manifest))
    wanted = draw(st.lists(st.sampled_from([m for _, m in made]), min_size=1, max_size=30))
    return blobs, wanted


@settings(max_examples=300, deadline=None)
@given(_manifests())
def test_folds_shared_across_values_equal_each_fold_alone(
        drawn: tuple[dict[bytes, bytes], list[Manifest]]) -> None:
    """Resolved together, in any order, every value is what its own chain alone gives."""
    blobs, wanted = drawn
    folds = ChainFolds(blobs)
    assert [folds.items(m) for m in wanted] == [_one_by_one(m, blobs) for m in wanted]


def _thread(versions: int) -> tuple[dict[bytes, bytes], list[Manifest], list[bytes]]:
    """A growing list's manifests, each a delta on the one before, stored; and the
    digest of each."""
    blobs: dict[bytes, bytes] = {}
    chain: list[bytes] = []
    manifests: list[Manifest] = []
    for number in range(versions):
        manifest = Manifest(chain=list(chain), keep=number,
                            add=[("json", _digest(str(number).encode()))])
        data = _encode(manifest)
        blobs[_digest(data)] = data
        manifests.append(manifest)
        chain = [_digest(data), *chain]
    return blobs, manifests, chain


def _counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    decoded: list[bytes] = []
    decode = elements.decode_manifest

    def counted(data: bytes) -> Manifest | None:
        decoded.append(data)
        return decode(data)

    monkeypatch.setattr(elements, "decode_manifest", counted)
    return decoded


def test_a_threads_chain_manifests_are_each_decoded_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Sixty versions of a growing list, each a delta on the one before: resolving all of
    them decodes each of the 59 chain manifests once (folding each alone decoded 1,770)."""
    blobs, versions, _ = _thread(60)
    expected = [_one_by_one(m, blobs) for m in reversed(versions)]
    decoded = _counting_decodes(monkeypatch)
    folds = ChainFolds(blobs)
    found = [folds.items(m) for m in reversed(versions)]  # newest first, as a page
    assert found == expected
    assert found[0] == [("json", _digest(str(n).encode())) for n in range(60)]
    assert len(decoded) == len(set(decoded)) == 59


def test_a_later_read_folds_only_what_a_store_has_not_folded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a store's cache, reading the latest version again after one more put decodes
    one manifest (the one the earlier read's fold did not cover); another tenant's read of
    the same chain shares nothing."""
    blobs, versions, _ = _thread(40)
    before, latest = (_one_by_one(m, blobs) for m in versions[-2:])
    cache = ManifestCache()
    assert ChainFolds(blobs, cache=(cache, "t")).items(versions[-2]) == before
    decoded = _counting_decodes(monkeypatch)
    assert ChainFolds(blobs, cache=(cache, "t")).items(versions[-1]) == latest
    assert len(decoded) == 1
    decoded.clear()
    assert ChainFolds(blobs, cache=(cache, "u")).items(versions[-1]) == latest
    assert len(decoded) == 39


@settings(max_examples=150, deadline=None)
@given(_manifests(), st.randoms(use_true_random=False))
def test_folds_held_by_a_store_equal_each_fold_alone(
        drawn: tuple[dict[bytes, bytes], list[Manifest]], rng: random.Random) -> None:
    """Reads one after another through one store's cache (each its own `ChainFolds`),
    the cache small enough to drop folds, give what each chain alone gives."""
    blobs, wanted = drawn
    cache = ManifestCache()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(elements, "_FOLDED_ITEMS", 40)
        order = wanted * 2
        rng.shuffle(order)
        for manifest in order:
            assert ChainFolds(blobs, cache=(cache, "t")).items(manifest) == _one_by_one(
                manifest, blobs)
        assert cache._fold_items <= 40 or len(cache._folds) == 1
