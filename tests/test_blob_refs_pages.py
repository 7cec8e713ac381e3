"""`BlobStorage.blob_refs_page`: verify pages through a tenant's blob counts in digest
order; every backend's pages, joined, are exactly its counts, sorted, and no other
tenant's. `BlobStorage.blob_sizes`: the stored lengths verify bounds its reads by."""

from __future__ import annotations

from eventlog import EventLog
from eventlog.hashing import content_digest
from eventlog.storage.defaults import BlobsByDigest
from eventlog.testing.events import Noted


async def test_pages_join_into_the_sorted_counts_of_one_tenant(log: EventLog) -> None:
    """Pages of 1, 3 and 50 after any digest give the tenant's (digest, count) pairs."""
    for number in range(12):
        payloads = [f"blob {number}".encode(), b"shared"]
        await log.append("t", f"s{number}", [Noted(text="x")], attach=payloads)
    await log.append("other", "s", [Noted(text="x")], attach=[b"elsewhere", b"shared"])
    expected = sorted((await log.blob_refs("t")).items())
    assert 13 == len(expected)
    assert 12 == max(n for _, n in expected)  # the shared blob, counted in "t" only
    storage = log.storage
    for limit in (1, 3, 50):
        pages, after = [], b""
        while True:
            page = await storage.blob_refs_page("t", after, limit)
            assert len(page) <= limit
            pages += page
            if len(page) < limit:
                break
            after = page[-1][0]
        assert expected == pages
    middle = expected[5][0]
    assert expected[6:9] == await storage.blob_refs_page("t", middle, 3)


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
