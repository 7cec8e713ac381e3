"""`eventlog.storage.defaults.BlobsByDigest.blob_sizes`, which reads the blobs, agrees with
each backend's own `blob_sizes` (the shipped contract, `BlobStorageContract`, checks each
backend's pages of `blob_refs_page` and its `blob_sizes`)."""

from __future__ import annotations

from eventlog import EventLog
from eventlog.hashing import content_digest
from eventlog.storage.defaults import BlobsByDigest
from eventlog.testing.events import Noted


async def test_blob_sizes_are_the_stored_lengths_of_one_tenant(log: EventLog) -> None:
    """Each backend's answer, and `BlobsByDigest`'s (which reads the blobs), is the length of
    each stored blob of the tenant asked about; absent and other tenants' are left out."""
    payloads = [b"", b"a", b"b" * 70_000]
    await log.append("t", "s", [Noted(text="x")], attach=payloads)
    await log.append("other", "s", [Noted(text="x")], attach=[b"elsewhere"])
    digests = [content_digest(payload) for payload in payloads]
    asked = [*digests, content_digest(b"elsewhere"), content_digest(b"never stored")]
    expected = {digest: len(payload) for digest, payload in zip(digests, payloads, strict=True)}
    assert expected == await log.storage.blob_sizes("t", asked)
    assert expected == await BlobsByDigest.blob_sizes(log.storage, "t", asked)
    assert {} == await log.storage.blob_sizes("t", [])
