"""Contract: content-addressed blobs written with the appends that reference them."""

from __future__ import annotations

import hashlib

import pytest

from eventlog import EventLog, ReleaseNotHeld, StreamAppend, VersionConflict, content_digest
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Holding, Noted

STATE = b'{"state": "some checkpoint state"}'


DIGEST = content_digest(STATE)
HOLDS = Holding(text="holds", blobs=[DIGEST.hex()])
"""An event naming STATE's blob: appended with ``attach=[STATE]``, its stream holds it."""


def gives(count: int = 1) -> Holding:
    """A tombstone giving up ``count`` of its stream's references to STATE's blob."""
    return Holding(text="gives", released={DIGEST.hex(): count})


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
        await log.append("t", "s", [HOLDS, HOLDS], attach=[STATE, STATE])
        await log.append("t", "s", [gives()], release={DIGEST: 1})
        assert ({DIGEST: 1}, STATE) == (
            dict(await log.blob_refs("t")), await log.get_blob("t", DIGEST)
        )

    async def test_release_to_zero_purges_the_blob(self, log: EventLog) -> None:
        """When the last reference goes, the payload is gone."""
        await log.append("t", "s", [HOLDS], attach=[STATE])
        await log.append("t", "s", [gives()], release={DIGEST: 1})
        assert ({}, None) == (dict(await log.blob_refs("t")), await log.get_blob("t", DIGEST))

    async def test_a_blob_the_digest_tells_is_stored_once_never_counted_nor_purged(
        self, log: EventLog
    ) -> None:
        """A payload of at most three bytes (`TOLD_BY_DIGEST`) is stored, its count stays 0
        however often it is attached, a release changes nothing and never purges it, and
        the log verifies throughout; a four-byte payload beside it is counted and purged."""
        small, four = b"\x0a", b"abcd"
        told, counted = content_digest(small), content_digest(four)
        holds = Holding(text="holds", blobs=[told.hex(), counted.hex()])
        await log.append("t", "s", [holds, holds], attach=[small, four, small, four])
        assert {told: 0, counted: 2} == dict(await log.blob_refs("t"))
        assert (await log.verify()).ok
        gives_both = Holding(text="gives", released={told.hex(): 2, counted.hex(): 2})
        await log.append("t", "s", [gives_both], release={told: 2, counted: 2})
        assert ({told: 0}, small, None) == (
            dict(await log.blob_refs("t")), await log.get_blob("t", told),
            await log.get_blob("t", counted))
        assert (await log.verify()).ok
        # Attached again later, it is still one row at 0.
        await log.append("t", "s2", [Holding(text="again", blobs=[told.hex()])],
                         attach=[small])
        assert {told: 0} == dict(await log.blob_refs("t"))
        assert (await log.verify()).ok

    async def test_an_empty_payload_is_a_blob_the_digest_tells(self, log: EventLog) -> None:
        """The empty payload (a null channel's) is stored and read back as empty bytes,
        never counted."""
        empty = content_digest(b"")
        await log.append("t", "s", [Holding(text="holds", blobs=[empty.hex()])], attach=[b""])
        assert (b"", {empty: 0}) == (await log.get_blob("t", empty),
                                    dict(await log.blob_refs("t")))

    async def test_releasing_more_than_the_stream_holds_is_refused(self, log: EventLog) -> None:
        """A release beyond the references the stream's events hold raises ReleaseNotHeld."""
        await log.append("t", "s", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld):
            await log.append("t", "s", [gives(5)], release={DIGEST: 5})

    async def test_release_of_a_blob_another_stream_holds_is_refused(
        self, log: EventLog
    ) -> None:
        """A stream cannot give up a reference that only another stream's events hold."""
        await log.append("t", "victim", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld):
            await log.append("t", "evil", [gives()], release={DIGEST: 1})

    async def test_a_refused_release_writes_nothing(self, log: EventLog) -> None:
        """After a refused release the blob, its count and the releasing stream are as before."""
        await log.append("t", "victim", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld):
            await log.append("t", "evil", [gives()], release={DIGEST: 1})
        assert (STATE, {DIGEST: 1}, None) == (
            await log.get_blob("t", DIGEST), dict(await log.blob_refs("t")),
            await log.stream_head("t", "evil"),
        )

    async def test_a_refused_release_names_its_stream_and_digest(self, log: EventLog) -> None:
        """ReleaseNotHeld carries the stream and the digest it would have released."""
        await log.append("t", "victim", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld) as refused:
            await log.append("t", "evil", [gives()], release={DIGEST: 1})
        assert ("evil", DIGEST, 1, 0) == (refused.value.stream_id, refused.value.digest,
                                         refused.value.releasing, refused.value.held)

    async def test_a_release_its_events_do_not_declare_is_refused(self, log: EventLog) -> None:
        """An append releases only what its own events say they give up (a tombstone)."""
        await log.append("t", "s", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld):
            await log.append("t", "s", [Noted(text="b")], release={DIGEST: 1})

    async def test_a_stream_releases_a_reference_only_once(self, log: EventLog) -> None:
        """Once a stream gave up its reference, releasing it again (another stream's) is
        refused."""
        await log.append("t", "other", [HOLDS], attach=[STATE])
        await log.append("t", "s", [HOLDS], attach=[STATE])
        await log.append("t", "s", [gives()], release={DIGEST: 1})
        with pytest.raises(ReleaseNotHeld):
            await log.append("t", "s", [gives()], release={DIGEST: 1})

    async def test_a_batch_releasing_another_streams_blob_writes_nothing(
        self, log: EventLog
    ) -> None:
        """append_batch with one part releasing what its stream does not hold is refused
        whole: no part is written and the blob keeps its reference."""
        await log.append("t", "victim", [HOLDS], attach=[STATE])
        with pytest.raises(ReleaseNotHeld):
            await log.append_batch([
                StreamAppend(tenant_id="t", stream_id="fine", events=[Noted(text="a")]),
                StreamAppend(tenant_id="t", stream_id="evil", events=[gives()],
                             release={DIGEST: 1}),
            ])
        assert ({DIGEST: 1}, None) == (dict(await log.blob_refs("t")),
                                       await log.stream_head("t", "fine"))

    async def test_an_append_may_release_what_its_own_events_name(self, log: EventLog) -> None:
        """A reference attached and given up in the same append is released."""
        await log.append("t", "s", [HOLDS, gives()], attach=[STATE], release={DIGEST: 1})
        assert {} == dict(await log.blob_refs("t"))

    async def test_purged_blob_can_be_attached_again(self, log: EventLog) -> None:
        """After a purge, attaching the same bytes stores them afresh."""
        await log.append("t", "s", [HOLDS], attach=[STATE])
        await log.append("t", "s", [gives()], release={DIGEST: 1})
        await log.append("t", "s", [HOLDS], attach=[STATE])
        assert (STATE, {DIGEST: 1}) == (
            await log.get_blob("t", DIGEST), dict(await log.blob_refs("t"))
        )

    async def test_blob_of_another_tenant_is_absent(self, log: EventLog) -> None:
        """get_blob in another tenant returns None, as for a digest never stored."""
        await log.append("owner", "s", [Noted(text="a")], attach=[STATE])
        assert None is await log.get_blob("intruder", DIGEST)

    async def test_tenants_count_references_separately(self, log: EventLog) -> None:
        """Purging a blob in one tenant leaves another tenant's copy alone."""
        await log.append("t1", "s", [HOLDS], attach=[STATE])
        await log.append("t2", "s", [HOLDS], attach=[STATE])
        await log.append("t1", "s", [gives()], release={DIGEST: 1})
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
