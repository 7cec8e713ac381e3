"""Copying element-stored values to another thread of an encrypted log.

On an encrypted log a manifest names its elements and the manifests of its chain by their
sealed addresses, which are the source thread's (each thread is its own subject, with its
own key). The log renames the addresses a copy's *events* name (it re-seals each attached
payload under the target and maps the source's address to the target's), but a manifest
is sealed whole, so the names inside it must be rewritten before it is attached: each
manifest of the copy is rebuilt naming the target's addresses, its chain rebuilt the same
way (nearest first, so the copy keeps the source's deltas), and the rebuilt manifests and
the elements they name are put in the copy's ``blobs`` under the target's addresses.
After that `elements.copied_values` and `elements.copied_writes` treat the copy as they
treat one on a plain log.

Nothing here does I/O but through the ``get_blobs`` it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from eventlog.checkpoints.elements import (
    ELEMENTS_ENCODING,
    Address,
    GetBlobs,
    Manifest,
    decode_manifest,
    resolve_items,
)
from eventlog.events.threads import BlobRef

_encoder = msgspec.msgpack.Encoder()


class _Readdress:
    """Rebuilds source manifests under the target's ``address``, each once."""

    def __init__(self, manifests: dict[bytes, Manifest], blobs: dict[bytes, bytes],
                 address: Address) -> None:
        self.manifests = manifests
        self.blobs = blobs
        self.address = address
        self.done: dict[bytes, bytes] = {}

    def element(self, digest: bytes) -> bytes:
        data = self.blobs[digest]
        target = self.address(data)
        self.blobs[target] = data
        return target

    def manifest(self, digest: bytes) -> bytes:
        """The target's address of the source manifest ``digest``, rebuilt."""
        found = self.done.get(digest)
        if found is None:
            source = self.manifests[digest]
            found = self.put(Manifest([self.manifest(base) for base in source.chain],
                                      source.keep,
                                      [(encoding, self.element(item))
                                       for encoding, item in source.add]))
            self.done[digest] = found
        return found

    def put(self, manifest: Manifest) -> bytes:
        data = _encoder.encode(manifest)
        target = self.address(data)
        self.blobs[target] = data
        return target


async def _manifests(digests: Sequence[bytes], blobs: dict[bytes, bytes],
                     get_blobs: GetBlobs) -> dict[bytes, Manifest] | None:
    """The manifests of ``digests`` and of their chains, and their elements' data in
    ``blobs`` (two reads at most); None when one is gone or damaged."""
    found: dict[bytes, Manifest] = {}
    for digest in digests:
        manifest = decode_manifest(blobs[digest])
        if manifest is None:
            return None
        found[digest] = manifest
    chains = [base for manifest in list(found.values()) for base in manifest.chain
              if base not in found and base not in blobs]
    blobs.update(await get_blobs(list(dict.fromkeys(chains))) if chains else {})
    for manifest in list(found.values()):
        for base in manifest.chain:
            if base not in found:
                decoded = decode_manifest(blobs[base]) if base in blobs else None
                if decoded is None:
                    return None
                found[base] = decoded
    elements = list(dict.fromkeys(item for manifest in found.values()
                                  for _, item in manifest.add if item not in blobs))
    blobs.update(await get_blobs(elements) if elements else {})
    if any(item not in blobs for manifest in found.values() for _, item in manifest.add):
        return None
    return found


async def readdressed_values(
    values: Mapping[str, list[BlobRef]], blobs: dict[bytes, bytes], get_blobs: GetBlobs,
    address: Address,
) -> dict[str, list[BlobRef]] | None:
    """The copy's stored values (by namespace) with each element-stored one naming its
    manifest rebuilt under the target's ``address`` (its chain too, when the copy carries
    the whole chain; else a full manifest). None when a manifest or element is gone."""
    digests = [bytes.fromhex(ref.digest) for refs in values.values() for ref in refs
               if ref.encoding == ELEMENTS_ENCODING and bytes.fromhex(ref.digest) in blobs]
    manifests = await _manifests(digests, blobs, get_blobs)
    if manifests is None:
        return None
    rebuild = _Readdress(manifests, blobs, address)
    result: dict[str, list[BlobRef]] = {}
    for namespace, refs in values.items():
        present = {bytes.fromhex(ref.digest) for ref in refs}
        copied = result[namespace] = []
        for ref in refs:
            source = bytes.fromhex(ref.digest)
            if source not in manifests:
                copied.append(ref)
                continue
            manifest = manifests[source]
            if all(base in present for base in manifest.chain):
                target, base = rebuild.manifest(source), ref.base
            else:
                items = resolve_items(manifest, {digest: _encoder.encode(found)
                                                 for digest, found in manifests.items()})
                assert items is not None  # every manifest of the chain was read above
                target = rebuild.put(Manifest([], 0, [(encoding, rebuild.element(item))
                                                      for encoding, item in items]))
                base = ""
            # The version stays the source's name of it (a content-addressed value's
            # version is its digest, which changes here).
            copied.append(msgspec.structs.replace(
                ref, digest=target.hex(), version=ref.channel_version, base=base))
    return result


async def readdressed_writes(
    writes: Sequence[Mapping[str, Any]], blobs: dict[bytes, bytes], get_blobs: GetBlobs,
    address: Address,
) -> list[dict[str, Any]] | None:
    """The copy's write rows, each element-stored one naming its manifest rebuilt under
    the target's ``address``. None when a manifest or element is gone."""
    digests = [write["digest"] for write in writes
               if write["encoding"] == ELEMENTS_ENCODING and write["digest"] in blobs]
    manifests = await _manifests(digests, blobs, get_blobs)
    if manifests is None:
        return None
    rebuild = _Readdress(manifests, blobs, address)
    return [dict(write, digest=rebuild.manifest(write["digest"]))
            if write["digest"] in manifests else dict(write) for write in writes]
