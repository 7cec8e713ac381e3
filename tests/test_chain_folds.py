"""`ChainFolds`: many element-stored values resolved over one set of blobs, each chain
manifest decoded once and each chain suffix folded once, give exactly what folding each
value's own chain alone gives: for any chains (a thread's, forks, chains that name
manifests whose own chains say otherwise, missing or damaged manifests)."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog.checkpoints import elements
from eventlog.checkpoints.elements import ChainFolds, Manifest

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


def test_a_threads_chain_manifests_are_each_decoded_once() -> None:
    """Sixty versions of a growing list, each a delta on the one before: resolving all of
    them decodes each of the 59 chain manifests once (folding each alone decoded 1,770)."""
    blobs: dict[bytes, bytes] = {}
    chain: list[bytes] = []
    versions: list[Manifest] = []
    for number in range(60):
        manifest = Manifest(chain=list(chain), keep=number,
                            add=[("json", _digest(str(number).encode()))])
        data = _encode(manifest)
        blobs[_digest(data)] = data
        versions.append(manifest)
        chain = [_digest(data), *chain]
    decoded: list[bytes] = []

    class Counting(dict[bytes, bytes]):
        def get(self, key: bytes, default: object = None) -> bytes | None:  # type: ignore[override]
            decoded.append(key)
            return super().get(key)

    folds = ChainFolds(Counting(blobs))
    found = [folds.items(m) for m in reversed(versions)]  # newest first, as a page
    assert found == [_one_by_one(m, blobs) for m in reversed(versions)]
    assert found[0] == [("json", _digest(str(n).encode())) for n in range(60)]
    assert sorted(decoded) == sorted(set(decoded))
    assert len(decoded) == 59
