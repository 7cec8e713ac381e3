"""Contract: content-addressed blobs written with the appends that reference them."""

from __future__ import annotations

import hashlib

import pytest

from eventlog import EventLog, VersionConflict, content_digest
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted

STATE = b'{"state": "some checkpoint state"}'


DIGEST = content_digest(STATE)


class LogBlobsContract(ContractBase):
    """Contract: content-addressed blobs written with the appends that reference them."""

    async def test_attached_blob_reads_back_by_digest(self, log: EventLog) -> None:
        """A blob attached to an append is readable by (tenant, sha256)."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE])
        assert STATE == await log.get_blob("t", DIGEST)

    async def test_digest_is_sha256(self, log: EventLog) -> None:
        """The content address is the SHA-256 of the payload."""
        assert hashlib.sha256(STATE).digest() == DIGEST

    async def test_attaching_the_same_bytes_twice_counts_two_refs(self, log: EventLog) -> None:
        """Identical payloads are stored once, with one reference per attach."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t", "s", [Noted(text="b")], attach=[STATE])
        assert {DIGEST: 2} == dict(await log.blob_refs("t"))

    async def test_same_bytes_twice_in_one_append_counts_two_refs(self, log: EventLog) -> None:
        """Duplicates within one append are deduplicated but each counts."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE, STATE, b"other"])
        assert {DIGEST: 2, content_digest(b"other"): 1} == dict(await log.blob_refs("t"))

    async def test_release_drops_references(self, log: EventLog) -> None:
        """Releasing one of two references keeps the blob readable."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE, STATE])
        await log.append("t", "s", [Noted(text="b")], release={DIGEST: 1})
        assert ({DIGEST: 1}, STATE) == (
            dict(await log.blob_refs("t")), await log.get_blob("t", DIGEST)
        )

    async def test_release_to_zero_purges_the_blob(self, log: EventLog) -> None:
        """When the last reference goes, the payload is gone."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t", "s", [Noted(text="b")], release={DIGEST: 1})
        assert ({}, None) == (dict(await log.blob_refs("t")), await log.get_blob("t", DIGEST))

    async def test_releasing_more_than_held_purges_the_blob(self, log: EventLog) -> None:
        """Over-releasing never leaves a negative count behind."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t", "s", [Noted(text="b")], release={DIGEST: 5})
        assert ({}, None) == (dict(await log.blob_refs("t")), await log.get_blob("t", DIGEST))

    async def test_purged_blob_can_be_attached_again(self, log: EventLog) -> None:
        """After a purge, attaching the same bytes stores them afresh."""
        await log.append("t", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t", "s", [Noted(text="b")], release={DIGEST: 1})
        await log.append("t", "s", [Noted(text="c")], attach=[STATE])
        assert (STATE, {DIGEST: 1}) == (
            await log.get_blob("t", DIGEST), dict(await log.blob_refs("t"))
        )

    async def test_blob_of_another_tenant_is_absent(self, log: EventLog) -> None:
        """get_blob in another tenant returns None, as for a digest never stored."""
        await log.append("owner", "s", [Noted(text="a")], attach=[STATE])
        assert None is await log.get_blob("intruder", DIGEST)

    async def test_tenants_count_references_separately(self, log: EventLog) -> None:
        """Purging a blob in one tenant leaves another tenant's copy alone."""
        await log.append("t1", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t2", "s", [Noted(text="a")], attach=[STATE])
        await log.append("t1", "s", [Noted(text="b")], release={DIGEST: 1})
        assert (None, STATE) == (await log.get_blob("t1", DIGEST), await log.get_blob("t2", DIGEST))

    async def test_unknown_digest_is_none(self, log: EventLog) -> None:
        """A digest never stored reads as None."""
        assert None is await log.get_blob("t", content_digest(b"never"))

    async def test_conflicting_append_writes_no_blob(self, log: EventLog) -> None:
        """A blob attached to an append that conflicts is not stored."""
        await log.append("t", "s", [Noted(text="a")])
        with pytest.raises(VersionConflict):
            await log.append("t", "s", [Noted(text="b")], expected_version=0, attach=[STATE])
        assert (None, {}) == (await log.get_blob("t", DIGEST), dict(await log.blob_refs("t")))

    async def test_empty_blob_round_trips(self, log: EventLog) -> None:
        """A zero-byte payload is a blob like any other."""
        await log.append("t", "s", [Noted(text="a")], attach=[b""])
        assert b"" == await log.get_blob("t", content_digest(b""))
