"""Contract: `EventLog.append_batch`, many streams in one transaction."""

from __future__ import annotations

import uuid

import pytest

from eventlog import (
    ANY,
    NO_STREAM,
    CheckpointCreated,
    EventLog,
    InvalidInput,
    StreamAppend,
    VersionConflict,
    content_digest,
)
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle
from projections import compare_views


def created(session: str, run: uuid.UUID, step: int, state: bytes) -> CheckpointCreated:
    """A checkpoint event whose state is ``state`` (attach it in the same append)."""
    return CheckpointCreated(
        session_id=session, run_id=run, checkpoint_id=f"c{step}", step=step,
        state_digest=content_digest(state).hex(), state_encoding="bytes",
        state_size=len(state),
    )


def session_append(session: str, run: uuid.UUID, steps: range, **options: object
                   ) -> StreamAppend:
    """A batch part of checkpoints ``steps`` in ``session``, each with its own state."""
    states = [f"state {session} {step}".encode() for step in steps]
    return StreamAppend(
        tenant_id="t", stream_id=f"session:{session}",
        events=[created(session, run, step, state)
                for step, state in zip(steps, states, strict=True)],
        attach=states, **options,  # type: ignore[arg-type]
    )


async def versions(log: EventLog, stream: str) -> list[int]:
    """The versions stored in one stream of tenant ``t``."""
    return [event.version async for event in log.read_stream("t", stream)]



class LogBatchContract(ContractBase):
    """Contract: `EventLog.append_batch`, many streams in one transaction."""

    async def test_batch_appends_to_every_stream_in_order(self, log: EventLog) -> None:
        """Each part lands on its own stream; results come back in the batch's order."""
        await log.append("t", "b", [Noted(text="first")])
        results = await log.append_batch([
            StreamAppend(tenant_id="t", stream_id="a", events=[Noted(text="1"), Noted(text="2")]),
            StreamAppend(tenant_id="t", stream_id="b", events=[Noted(text="3")]),
        ])
        assert [("a", 2), ("b", 2)] == [(r.stream_id, r.version) for r in results]
        assert ([1, 2], [1, 2]) == (await versions(log, "a"), await versions(log, "b"))

    async def test_batch_positions_are_the_stored_positions(self, log: EventLog) -> None:
        """Every result's positions are where its events are read back, increasing in order."""
        results = await log.append_batch([
            StreamAppend(tenant_id="t", stream_id=f"s{n}", events=[Noted(text="x")] * 3)
            for n in range(4)
        ])
        stored = [[e.position async for e in log.read_stream("t", f"s{n}")] for n in range(4)]
        assert stored == [list(result.positions) for result in results]
        flat = [position for result in results for position in result.positions]
        assert sorted(flat) == flat

    async def test_conflict_in_one_stream_writes_nothing(self, log: EventLog) -> None:
        """A stream off its expected version fails the whole batch: no stream, blob or view
        changed."""
        await log.append("t", "taken", [Noted(text="x")])
        before = (await log.dump_views(), dict(await log.blob_refs("t")))
        with pytest.raises(VersionConflict) as raised:
            await log.append_batch([
                session_append("fresh", uuid.uuid4(), range(3)),
                StreamAppend(tenant_id="t", stream_id="taken", events=[Noted(text="y")],
                             expected_version=NO_STREAM),
            ])
        assert "taken" == raised.value.stream_id
        assert [] == await versions(log, "session:fresh")
        assert before == (await log.dump_views(), dict(await log.blob_refs("t")))

    async def test_exact_expected_versions_are_checked_per_stream(self, log: EventLog) -> None:
        """Every stream's expected version must hold; then the batch appends after each."""
        await log.append("t", "a", [Noted(text="x")] * 2)
        results = await log.append_batch([
            StreamAppend(tenant_id="t", stream_id="a", events=[Noted(text="y")],
                         expected_version=2),
            StreamAppend(tenant_id="t", stream_id="b", events=[Noted(text="y")],
                         expected_version=NO_STREAM),
            StreamAppend(tenant_id="t", stream_id="c", events=[Noted(text="y")],
                         expected_version=ANY),
        ])
        assert [3, 1, 1] == [result.version for result in results]

    async def test_chains_verify_and_views_equal_a_rebuild(self, log: EventLog) -> None:
        """Checkpoints batched over many sessions (new and continued) chain and fold exactly
        as appended one by one."""
        runs = [uuid.uuid4() for _ in range(3)]
        await log.append_batch([session_append(f"s{n}", runs[n], range(2)) for n in range(3)])
        await log.append_batch([session_append(f"s{n}", runs[n], range(2, 5)) for n in range(3)]
                               + [session_append("s3", uuid.uuid4(), range(4))])
        await settle(log)
        report = await log.verify()
        assert (True, 4, 19) == (report.ok, report.streams, report.events)
        assert [] == await compare_views(log)

    async def test_blobs_attached_across_streams_are_counted(self, log: EventLog) -> None:
        """The same payload attached by two streams of one batch is stored once, two refs."""
        payload = b"shared state"
        await log.append_batch([
            StreamAppend(tenant_id="t", stream_id=name, events=[Noted(text=name)],
                         attach=[payload])
            for name in ("a", "b")
        ])
        assert {content_digest(payload): 2} == dict(await log.blob_refs("t"))
        assert payload == await log.get_blob("t", content_digest(payload))

    async def test_a_stream_twice_in_one_batch_is_refused(self, log: EventLog) -> None:
        """One part per stream: a stream named twice is InvalidInput, nothing written."""
        part = StreamAppend(tenant_id="t", stream_id="a", events=[Noted(text="x")])
        with pytest.raises(InvalidInput):
            await log.append_batch([part, part])
        assert [] == await versions(log, "a")

    async def test_empty_batch_is_refused(self, log: EventLog) -> None:
        """A batch must hold at least one part."""
        with pytest.raises(InvalidInput):
            await log.append_batch([])

    async def test_batch_survives_reopening(self, backend: ContractBackend) -> None:
        """A committed batch is read back, chains intact, after the store is reopened."""
        async with backend.open() as log:
            await log.append_batch([session_append(f"s{n}", uuid.uuid4(), range(3))
                                    for n in range(2)])
        async with backend.open() as log:
            await settle(log)
            report = await log.verify()
            if backend.persistent:
                assert (True, 6) == (report.ok, report.events)
                assert [] == await compare_views(log)

    async def test_no_stream_on_a_stream_unknown_to_the_cache_still_conflicts(self, log: EventLog
                                                                              ) -> None:
        """NO_STREAM skips the head read; a stream another writer created is still a conflict
        (single append and batch), and nothing is written."""
        await log.append("t", "taken", [Noted(text="x")])
        other = log.sibling()  # a cold head cache
        with pytest.raises(VersionConflict):
            await other.append("t", "taken", [Noted(text="y")], expected_version=NO_STREAM)
        cold = log.sibling()
        with pytest.raises(VersionConflict):
            await cold.append_batch([
                StreamAppend(tenant_id="t", stream_id="fresh", events=[Noted(text="z")],
                             expected_version=NO_STREAM),
                StreamAppend(tenant_id="t", stream_id="taken", events=[Noted(text="z")],
                             expected_version=NO_STREAM),
            ])
        assert ([1], []) == (await versions(log, "taken"), await versions(log, "fresh"))
