"""Contract: the blob storage methods the log calls on a backend (``log.storage``), each
asked directly, on blobs the log's appends attached and released."""

from __future__ import annotations

from eventlog import EventLog, content_digest
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Holding, Noted


class BlobStorageCalls(ContractBase):
    """Contract: each `BlobStorage` method, asked of the backend directly."""

    async def test_get_blob_reads_only_its_own_tenants_blob(self, log: EventLog) -> None:
        """`get_blob` gives a tenant's blob by digest, None in another tenant or for a
        digest never stored."""
        await log.append("t", "s", [Noted(text="x")], attach=[b"mine"])
        storage = log.storage
        digest = content_digest(b"mine")
        assert (b"mine", None, None) == (
            await storage.get_blob("t", digest), await storage.get_blob("u", digest),
            await storage.get_blob("t", content_digest(b"never stored")))

    async def test_get_blobs_gives_those_that_exist(self, log: EventLog) -> None:
        """`get_blobs` gives the bytes of each asked digest the tenant holds (a digest
        asked twice once), leaving out absent ones and other tenants'."""
        await log.append("t", "s", [Noted(text="x")], attach=[b"one", b"two"])
        await log.append("u", "s", [Noted(text="x")], attach=[b"theirs"])
        one, two = content_digest(b"one"), content_digest(b"two")
        asked = [one, two, one, content_digest(b"theirs"), content_digest(b"never stored")]
        assert ({one: b"one", two: b"two"}, {}) == (
            await log.storage.get_blobs("t", asked), await log.storage.get_blobs("t", []))

    async def test_blob_sizes_are_the_stored_lengths_of_one_tenant(
        self, log: EventLog
    ) -> None:
        """`blob_sizes` gives the length of each stored blob of the tenant asked about;
        absent and other tenants' are left out."""
        payloads = [b"", b"a", b"b" * 70_000]
        await log.append("t", "s", [Noted(text="x")], attach=payloads)
        await log.append("other", "s", [Noted(text="x")], attach=[b"elsewhere"])
        digests = [content_digest(payload) for payload in payloads]
        asked = [*digests, content_digest(b"elsewhere"), content_digest(b"never stored")]
        expected = {digest: len(payload)
                    for digest, payload in zip(digests, payloads, strict=True)}
        assert expected == await log.storage.blob_sizes("t", asked)
        assert {} == await log.storage.blob_sizes("t", [])

    async def test_blob_refs_count_each_reference_of_one_tenant(self, log: EventLog) -> None:
        """`blob_refs` gives each of the tenant's blobs with its reference count."""
        await log.append("t", "s", [Noted(text="x")], attach=[b"twice", b"twice", b"once"])
        await log.append("u", "s", [Noted(text="x")], attach=[b"twice"])
        assert {content_digest(b"twice"): 2, content_digest(b"once"): 1} == dict(
            await log.storage.blob_refs("t"))

    async def test_pages_join_into_the_sorted_counts_of_one_tenant(
        self, log: EventLog
    ) -> None:
        """`blob_refs_page` pages of 1, 3 and 50 after any digest give the tenant's
        (digest, count) pairs in digest order, and no other tenant's."""
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
            for _ in range(len(expected) + 1):  # bounded: a page that never ends fails
                page = await storage.blob_refs_page("t", after, limit)
                assert len(page) <= limit
                pages += page
                if len(page) < limit:
                    break
                after = page[-1][0]
            assert expected == pages
        middle = expected[5][0]
        assert expected[6:9] == await storage.blob_refs_page("t", middle, 3)

    async def test_a_blob_released_to_zero_is_gone_from_every_read(
        self, log: EventLog
    ) -> None:
        """Once its last reference is released, a blob is absent from `get_blob`,
        `get_blobs`, `blob_sizes`, `blob_refs` and `blob_refs_page`."""
        digest = content_digest(b"state")
        await log.append("t", "s", [Holding(text="holds", blobs=[digest.hex()])],
                         attach=[b"state"])
        await log.append("t", "s", [Holding(text="gives", released={digest.hex(): 1})],
                         release={digest: 1})
        storage = log.storage
        assert (None, {}, {}, {}, []) == (
            await storage.get_blob("t", digest), await storage.get_blobs("t", [digest]),
            await storage.blob_sizes("t", [digest]), dict(await storage.blob_refs("t")),
            await storage.blob_refs_page("t", b"", 10))
