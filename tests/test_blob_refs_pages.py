"""`StorageBackend.blob_refs_page`: verify pages through a tenant's blob counts in digest
order; every backend's pages, joined, are exactly its counts, sorted, and no other
tenant's."""

from __future__ import annotations

from eventlog import EventLog
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
