"""A thread copy that loses races to removals of its source, and one whose source lost a
payload without any race (issue 24, §3).

A copy reads the source's rows, then their payloads. A removal committed in between
purges a payload the copy read the row of: the copy lost a race and decides again. When
it gives up, the `VersionConflict` it raises carries what really happened (the source's
version the copy read, the version the removal left) where main raised an invented
``VersionConflict(stream, "unchanged", -1)``. A payload missing with no append to the
source since it was read is no race: `BlobMissing` at once, not a minute of retries.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eventlog import EventLog, open_log
from eventlog.checkpoints import threads as threads_module
from eventlog.checkpoints.removal import backoff_delay
from eventlog.checkpoints.thread_records import Payload
from eventlog.checkpoints.threads import ThreadCheckpoints
from eventlog.errors import BlobMissing, VersionConflict
from eventlog.log.fencing import Retries
from tests.conftest import PG_URL

TENANT, SOURCE, TARGET = "t", "source", "target"


class Outraced(ThreadCheckpoints):
    """Thread checkpoints whose every payload read is beaten by a rival that puts a new
    checkpoint on the source and prunes it to that one, committed just before."""

    def __init__(self, log: EventLog, rival: ThreadCheckpoints) -> None:
        super().__init__(log)
        self.rival = rival
        self.beaten = 0

    async def _blobs(self, tenant_id: str, digests: list[bytes]) -> dict[bytes, bytes]:
        self.beaten += 1
        await self.rival.put(tenant_id, SOURCE, f"rival-{self.beaten:04d}",
                             state=Payload("json", b'{"rival": %d}' % self.beaten))
        await self.rival.prune(tenant_id, SOURCE, keep_latest=1)
        return await super()._blobs(tenant_id, digests)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str]]:
    if request.param == "postgresql":
        return PG_URL, {"schema": request.getfixturevalue("pg_schema")}
    return f"sqlite:///{tmp_path / 'log.db'}", {}


async def test_a_copy_that_keeps_losing_reports_the_race_it_really_lost(
    url: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every try of the copy loses its source's payload to a real prune; when it gives up,
    its conflict names the source stream, the version the copy read and the version the
    prune left, which is the source's version now (main: ``"unchanged"`` and -1)."""
    monkeypatch.setattr(threads_module, "REMOVAL_RETRIES",
                        # tries, not seconds: a busy machine fits fewer in 0.3 s
                        Retries(attempts=4, backoff=backoff_delay))
    async with open_log(url[0], **url[1]) as log, open_log(url[0], **url[1]) as other:
        rival = ThreadCheckpoints(other)
        await rival.put(TENANT, SOURCE, "own", state=Payload("json", b'{"own": 0}'))
        copier = Outraced(log, rival)
        with pytest.raises(VersionConflict) as raised:
            await copier.copy_thread(TENANT, SOURCE, TARGET)
        head = await log.stream_head(TENANT, f"thread:{SOURCE}")
        assert head is not None
        conflict = raised.value
        assert copier.beaten >= 2
        # The last try read the source before the rival's put and prune (two events).
        assert (f"thread:{SOURCE}", head[0] - 2, head[0]) == (
            conflict.stream_id, conflict.expected, conflict.actual)
        assert await ThreadCheckpoints(log).page(TENANT, TARGET) == []
        assert (await log.verify()).ok


async def test_a_copy_that_loses_once_copies_what_the_source_holds_then(
    url: tuple[str, dict[str, str]],
) -> None:
    """A copy beaten once decides again from fresh reads and copies the one checkpoint
    the prune left."""
    async with open_log(url[0], **url[1]) as log, open_log(url[0], **url[1]) as other:
        rival = ThreadCheckpoints(other)
        await rival.put(TENANT, SOURCE, "own", state=Payload("json", b'{"own": 0}'))

        class OnceOutraced(Outraced):
            async def _blobs(self, tenant_id: str, digests: list[bytes]) -> dict[bytes, bytes]:
                if self.beaten:
                    return await ThreadCheckpoints._blobs(self, tenant_id, digests)
                return await super()._blobs(tenant_id, digests)

        copier = OnceOutraced(log, rival)
        assert 1 == await copier.copy_thread(TENANT, SOURCE, TARGET)
        copied = await ThreadCheckpoints(log).page(TENANT, TARGET)
        assert ["rival-0001"] == [checkpoint.checkpoint_id for checkpoint in copied]
        assert (await log.verify()).ok


async def test_a_payload_gone_without_a_race_is_blob_missing_at_once(tmp_path: Path) -> None:
    """A source payload deleted behind the log's back (no append explains it) is
    `BlobMissing` naming the blob and the stream, on the first try (main: a minute of
    retries, then an invented `VersionConflict`)."""
    path = tmp_path / "log.db"
    async with open_log(f"sqlite:///{path}") as log:
        threads = ThreadCheckpoints(log)
        await threads.put(TENANT, SOURCE, "own", state=Payload("json", b'{"own": 0}'))
    with sqlite3.connect(path) as database:
        digest = database.execute("SELECT digest FROM blobs").fetchone()[0]
        database.execute("DELETE FROM blobs")
    async with open_log(f"sqlite:///{path}") as log:
        with pytest.raises(BlobMissing) as raised:
            await ThreadCheckpoints(log).copy_thread(TENANT, SOURCE, TARGET)
    assert (bytes(digest), f"thread:{SOURCE}") == (raised.value.digest, raised.value.stream_id)
