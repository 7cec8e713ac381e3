"""Contract: the checkpoint store's API."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from structlog.testing import capture_logs

from eventlog import CheckpointRecord, OpenLog
from eventlog.checkpoints import CheckpointCreated, SessionDeleted
from eventlog.hashing import content_digest
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.helpers import settle
from projections import compare_views

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


def record(session: str = "s", state: Any = None, **fields: Any) -> CheckpointRecord:
    """A create request in tenant ``t`` (unless ``fields`` say otherwise)."""
    values: dict[str, Any] = {"tenant_id": "t", "session_id": session, "run_id": RUN}
    values.update(fields)
    return CheckpointRecord(state={"n": 1} if state is None else state, **values)


def ids(records: list[CheckpointRecord]) -> list[str | None]:
    """The checkpoint ids of ``records``, in order."""
    return [r.checkpoint_id for r in records]


def _fields(value: CheckpointRecord) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__struct_fields__}



class CheckpointsContract(ContractBase):
    """Contract: the checkpoint store's API."""

    async def test_create_returns_the_record_with_its_position_and_time(
        self, log: OpenLog,
    ) -> None:
        """The written record carries what was given, plus the log position and recorded time."""
        given = record(checkpoint_id="c1", step=3, metadata={"k": "v"}, state={"a": [1, 2]})
        created = await log.checkpoints.create(given)
        event = [e async for e in log.read_stream("t", "session:s")][-1]
        expected = CheckpointRecord(
            tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="c1", step=3,
            state={"a": [1, 2]}, metadata={"k": "v"}, position=event.position,
            recorded_at=event.recorded_at,
        )
        assert expected == created

    async def test_created_record_is_what_list_returns_without_state(self, log: OpenLog) -> None:
        """A listed record equals the created one, except that its state is not read."""
        created = await log.checkpoints.create(record(metadata={"x": [1, {"y": None}]}))
        listed = await log.checkpoints.list("t", "s")
        assert [CheckpointRecord(**{**_fields(created), "state": None})] == listed

    async def test_a_run_id_given_as_a_string_is_stored_as_a_uuid(self, log: OpenLog) -> None:
        """``run_id`` may be a UUID string; records carry it as a UUID."""
        created = await log.checkpoints.create(record(run_id=str(RUN)))
        listed = await log.checkpoints.list("t", "s")
        assert (RUN, [RUN]) == (created.run_id, [r.run_id for r in listed])

    async def test_reads_carry_standard_python_types(self, log: OpenLog) -> None:
        """Run ids are uuid.UUID (not a driver's subclass) and times are aware UTC datetimes."""
        await log.checkpoints.create(record())
        listed = (await log.checkpoints.list("t", "s"))[0]
        session = (await log.checkpoints.sessions("t"))[0]
        run = (await log.checkpoints.runs("t", "s"))[0]
        kinds = {type(listed.run_id), type(session.latest_run_id), type(run.run_id)}
        assert ({uuid.UUID}, UTC) == (kinds, listed.recorded_at and listed.recorded_at.tzinfo)

    async def test_store_mints_time_ordered_uuid7_ids(self, log: OpenLog) -> None:
        """Without a checkpoint_id the store mints UUIDv7s that sort in creation order."""
        minted = [(await log.checkpoints.create(record())).checkpoint_id for _ in range(5)]
        assert [7] * 5 == [uuid.UUID(str(m)).version for m in minted]
        assert sorted(minted, key=str) == minted

    async def test_caller_chosen_checkpoint_id_is_kept(self, log: OpenLog) -> None:
        """A checkpoint_id given by the caller is the one stored and listed."""
        await log.checkpoints.create(record(checkpoint_id="langgraph-1ef-abc"))
        assert ["langgraph-1ef-abc"] == ids(await log.checkpoints.list("t", "s"))

    async def test_read_returns_a_json_state(self, log: OpenLog) -> None:
        """A JSON state reads back as the same value."""
        state = {"messages": ["hi", {"role": "user"}], "n": 1.5, "ok": True, "none": None}
        await log.checkpoints.create(record(checkpoint_id="c", state=state))
        assert state == await log.checkpoints.read("t", "s", "c")

    async def test_read_returns_a_json_scalar_state(self, log: OpenLog) -> None:
        """Any JSON value is a state, a bare string included."""
        await log.checkpoints.create(record(checkpoint_id="c", state="just text"))
        assert "just text" == await log.checkpoints.read("t", "s", "c")

    async def test_read_returns_bytes_state_as_bytes(self, log: OpenLog) -> None:
        """A bytes state is stored as it is and reads back as bytes."""
        await log.checkpoints.create(record(checkpoint_id="c", state=b"\x00\xffopaque"))
        assert b"\x00\xffopaque" == await log.checkpoints.read("t", "s", "c")

    async def test_read_of_an_unknown_id_is_none(self, log: OpenLog) -> None:
        """Reading an id never written answers None."""
        await log.checkpoints.create(record(checkpoint_id="c"))
        assert await log.checkpoints.read("t", "s", "other") is None

    async def test_read_of_another_tenants_checkpoint_is_none(self, log: OpenLog) -> None:
        """Another tenant's checkpoint, same session and id, reads as None."""
        await log.checkpoints.create(record(checkpoint_id="c", tenant_id="owner"))
        assert await log.checkpoints.read("intruder", "s", "c") is None

    async def test_read_of_another_sessions_checkpoint_is_none(self, log: OpenLog) -> None:
        """A checkpoint id of another session of the same tenant reads as None."""
        await log.checkpoints.create(record(session="a", checkpoint_id="c"))
        assert await log.checkpoints.read("t", "b", "c") is None

    async def test_duplicate_checkpoint_ids_are_all_kept(self, log: OpenLog) -> None:
        """Creating the same checkpoint id twice keeps both records (at-least-once)."""
        await log.checkpoints.create(record(checkpoint_id="c", state={"v": 1}))
        await log.checkpoints.create(record(checkpoint_id="c", state={"v": 2}))
        assert ["c", "c"] == ids(await log.checkpoints.list("t", "s"))

    async def test_read_of_a_duplicated_id_returns_the_newest_state(self, log: OpenLog) -> None:
        """With two records of one id, read answers with the one written last."""
        for value in (1, 2, 3):
            await log.checkpoints.create(record(checkpoint_id="c", state={"v": value}))
        assert {"v": 3} == await log.checkpoints.read("t", "s", "c")

    async def test_list_is_oldest_to_newest_with_no_state(self, log: OpenLog) -> None:
        """list returns every record in write order, each with state None."""
        for name in ("z", "a", "m"):
            await log.checkpoints.create(record(checkpoint_id=name))
        listed = await log.checkpoints.list("t", "s")
        assert (["z", "a", "m"], [None] * 3) == (ids(listed), [r.state for r in listed])

    async def test_list_of_an_unknown_session_is_empty(self, log: OpenLog) -> None:
        """A session with no checkpoints lists as empty."""
        assert [] == await log.checkpoints.list("t", "nothing-here")

    async def test_latest_of_an_empty_session_is_none(self, log: OpenLog) -> None:
        """latest answers None for a session without checkpoints."""
        assert await log.checkpoints.latest("t", "s") is None

    async def test_latest_is_the_last_written_not_the_largest_id(self, log: OpenLog) -> None:
        """latest follows write order, whatever the ids."""
        await log.checkpoints.create(record(checkpoint_id="b"))
        await log.checkpoints.create(record(checkpoint_id="a"))
        latest = await log.checkpoints.latest("t", "s")
        assert "a" == (latest.checkpoint_id if latest else None)

    async def test_latest_does_not_tie_when_the_clock_stands_still(
        self, backend: ContractBackend,
    ) -> None:
        """Two checkpoints recorded at the very same instant: latest is the second one."""
        instant = datetime(2026, 1, 1, tzinfo=UTC)
        async with backend.open(clock=lambda: instant) as log:
            first = await log.checkpoints.create(record(checkpoint_id="first"))
            second = await log.checkpoints.create(record(checkpoint_id="second"))
            latest = await log.checkpoints.latest("t", "s")
        assert first.recorded_at == second.recorded_at
        assert "second" == (latest.checkpoint_id if latest else None)

    async def test_index_without_parent_is_the_whole_ordered_index(self, log: OpenLog) -> None:
        """index(parent_id=None) lists every record of the session in order."""
        root = await log.checkpoints.create(record(checkpoint_id="root"))
        await log.checkpoints.create(record(checkpoint_id="child", parent_id=root.checkpoint_id))
        assert ["root", "child"] == ids(await log.checkpoints.index("t", "s"))

    async def test_index_with_parent_lists_only_its_children(self, log: OpenLog) -> None:
        """index(parent_id=p) lists exactly the records whose parent is p, in order."""
        await log.checkpoints.create(record(checkpoint_id="root"))
        await log.checkpoints.create(record(checkpoint_id="a", parent_id="root"))
        await log.checkpoints.create(record(checkpoint_id="a1", parent_id="a"))
        await log.checkpoints.create(record(checkpoint_id="b", parent_id="root"))
        assert ["a", "b"] == ids(await log.checkpoints.index("t", "s", parent_id="root"))

    async def test_index_with_a_parent_without_children_is_empty(self, log: OpenLog) -> None:
        """A leaf checkpoint has no children in the index."""
        await log.checkpoints.create(record(checkpoint_id="leaf"))
        assert [] == await log.checkpoints.index("t", "s", parent_id="leaf")

    async def test_list_by_run_partitions_a_session_across_resumes(self, log: OpenLog) -> None:
        """Each run lists only the records it wrote; the session lists them all in order."""
        first, second = uuid.uuid4(), uuid.uuid4()
        for step in range(3):
            await log.checkpoints.create(record(run_id=first, step=step, checkpoint_id=f"s{step}"))
        for step in (1, 2):  # resumed from s0: steps 1 and 2 run again
            await log.checkpoints.create(record(run_id=second, step=step, checkpoint_id=f"s{step}"))
        assert ["s0", "s1", "s2"] == ids(await log.checkpoints.list_by_run("t", first))
        assert ["s1", "s2"] == ids(await log.checkpoints.list_by_run("t", second))
        assert ["s0", "s1", "s2", "s1", "s2"] == ids(await log.checkpoints.list("t", "s"))

    async def test_list_by_run_is_scoped_by_tenant(self, log: OpenLog) -> None:
        """The same run id in another tenant lists nothing of this one's."""
        await log.checkpoints.create(record(tenant_id="a", checkpoint_id="mine"))
        assert [] == await log.checkpoints.list_by_run("b", RUN)

    async def test_delete_returns_how_many_records_it_removed(self, log: OpenLog) -> None:
        """delete counts every record of the session, duplicates included."""
        for _ in range(3):
            await log.checkpoints.create(record(checkpoint_id="same"))
        assert 3 == await log.checkpoints.delete("t", "s")

    async def test_after_delete_reads_answer_none_and_lists_are_empty(self, log: OpenLog) -> None:
        """A deleted session reads None, lists empty and has no latest."""
        await log.checkpoints.create(record(checkpoint_id="c"))
        await log.checkpoints.delete("t", "s")
        answers = (
            await log.checkpoints.read("t", "s", "c"),
            await log.checkpoints.list("t", "s"),
            await log.checkpoints.latest("t", "s"),
            await log.checkpoints.list_by_run("t", RUN),
            await log.checkpoints.runs("t", "s"),
        )
        assert (None, [], None, [], []) == answers

    async def test_delete_keeps_the_events_and_the_chain_verifies(self, log: OpenLog) -> None:
        """The checkpoint events stay, a tombstone follows them, and verify finds no problem."""
        await log.checkpoints.create(record(checkpoint_id="c"))
        await log.checkpoints.delete("t", "s")
        events = [e.event async for e in log.read_stream("t", "session:s")]
        assert [CheckpointCreated, SessionDeleted] == [type(e) for e in events]
        assert isinstance(events[0], CheckpointCreated)
        assert SessionDeleted(session_id="s", checkpoints=1,
                              released={events[0].state_digest: 1}) == events[1]
        assert (await log.verify()).ok

    async def test_delete_of_a_session_without_checkpoints_writes_nothing(
        self, log: OpenLog,
    ) -> None:
        """Deleting an empty session returns 0 and appends no tombstone."""
        assert 0 == await log.checkpoints.delete("t", "never-written")
        await settle(log)
        assert [] == (await log.read_all()).events

    async def test_delete_leaves_other_sessions_and_tenants_alone(self, log: OpenLog) -> None:
        """Deleting one session keeps another session's and another tenant's same-named ones."""
        await log.checkpoints.create(record(session="a", checkpoint_id="c"))
        await log.checkpoints.create(record(session="b", checkpoint_id="c"))
        await log.checkpoints.create(record(session="a", checkpoint_id="c", tenant_id="u"))
        await log.checkpoints.delete("t", "a")
        assert ["c"] == ids(await log.checkpoints.list("t", "b"))
        assert ["c"] == ids(await log.checkpoints.list("u", "a"))

    async def test_a_create_after_delete_starts_a_fresh_history(self, log: OpenLog) -> None:
        """A session written again after its deletion lists only what came after."""
        await log.checkpoints.create(record(checkpoint_id="old"))
        await log.checkpoints.delete("t", "s")
        await log.checkpoints.create(record(checkpoint_id="new"))
        assert ["new"] == ids(await log.checkpoints.list("t", "s"))
        assert 1 == len(await log.checkpoints.runs("t", "s"))

    async def test_identical_states_are_stored_once(self, log: OpenLog) -> None:
        """Two checkpoints with the same state share one blob referenced twice."""
        await log.checkpoints.create(record(checkpoint_id="a", state={"same": True}))
        await log.checkpoints.create(record(checkpoint_id="b", state={"same": True}))
        digest = content_digest(b'{"same":true}')
        assert {digest: 2} == dict(await log.blob_refs("t"))

    async def test_delete_purges_the_session_state_blobs(self, log: OpenLog) -> None:
        """Deleting the only session using a blob purges it."""
        await log.checkpoints.create(record(checkpoint_id="a", state={"same": True}))
        await log.checkpoints.create(record(checkpoint_id="b", state={"same": True}))
        await log.checkpoints.delete("t", "s")
        assert ({}, None) == (
            dict(await log.blob_refs("t")),
            await log.get_blob("t", content_digest(b'{"same":true}')),
        )

    async def test_a_blob_shared_with_another_session_survives_delete(self, log: OpenLog) -> None:
        """A state also used by another session of the tenant stays, with one reference."""
        await log.checkpoints.create(record(session="a", checkpoint_id="c", state={"shared": 1}))
        await log.checkpoints.create(record(session="a", checkpoint_id="d", state={"shared": 1}))
        await log.checkpoints.create(record(session="b", checkpoint_id="c", state={"shared": 1}))
        await log.checkpoints.delete("t", "a")
        digest = content_digest(b'{"shared":1}')
        assert {digest: 1} == dict(await log.blob_refs("t"))
        assert {"shared": 1} == await log.checkpoints.read("t", "b", "c")

    async def test_blobs_are_per_tenant(self, log: OpenLog) -> None:
        """The same state in two tenants is two blobs; deleting in one keeps the other's."""
        await log.checkpoints.create(record(tenant_id="a", checkpoint_id="c", state={"x": 1}))
        await log.checkpoints.create(record(tenant_id="b", checkpoint_id="c", state={"x": 1}))
        await log.checkpoints.delete("a", "s")
        assert {"x": 1} == await log.checkpoints.read("b", "s", "c")

    async def test_sessions_lists_the_tenants_sessions_with_their_latest(
        self, log: OpenLog,
    ) -> None:
        """sessions() gives each live session of the tenant once, with its latest checkpoint."""
        await log.checkpoints.create(record(session="b", checkpoint_id="b1"))
        await log.checkpoints.create(record(session="a", checkpoint_id="a1"))
        last = await log.checkpoints.create(record(session="b", checkpoint_id="b2", step=7))
        await log.checkpoints.create(record(session="gone", checkpoint_id="g"))
        await log.checkpoints.create(record(tenant_id="other", session="c", checkpoint_id="c"))
        await log.checkpoints.delete("t", "gone")
        sessions = await log.checkpoints.sessions("t")
        assert ["a", "b"] == [s.session_id for s in sessions]
        latest = sessions[1]
        assert ("b2", RUN, 7, last.position, last.recorded_at) == (
            latest.latest_checkpoint_id, latest.latest_run_id, latest.latest_step,
            latest.latest_position, latest.updated_at,
        )

    async def test_sessions_pages_by_session_id(self, log: OpenLog) -> None:
        """sessions(after=, limit=) walks the tenant's sessions in id order."""
        for name in ("d", "a", "c", "b"):
            await log.checkpoints.create(record(session=name))
        first = await log.checkpoints.sessions("t", limit=3)
        rest = await log.checkpoints.sessions("t", after=first[-1].session_id, limit=3)
        assert (["a", "b", "c"], ["d"]) == (
            [s.session_id for s in first], [s.session_id for s in rest]
        )

    async def test_runs_are_listed_in_start_order_with_their_resume_point(
        self, log: OpenLog,
    ) -> None:
        """runs() gives each run once, in the order it started, with where it resumed from."""
        first, second = uuid.uuid4(), uuid.uuid4()
        await log.checkpoints.create(record(run_id=first, checkpoint_id="s0"))
        await log.checkpoints.create(
            record(run_id=first, checkpoint_id="s1", parent_id="s0", step=1))
        await log.checkpoints.create(
            record(run_id=second, checkpoint_id="s1b", parent_id="s0", step=1))
        await log.checkpoints.create(record(run_id=first, checkpoint_id="late", step=9))
        runs = await log.checkpoints.runs("t", "s")
        assert [(first, "s0", None, 0), (second, "s1b", "s0", 1)] == [
            (r.run_id, r.first_checkpoint_id, r.first_parent_id, r.first_step) for r in runs
        ]

    async def test_parent_in_the_same_session_is_accepted(self, log: OpenLog) -> None:
        """A parent that is a checkpoint of the same session is recorded on the child."""
        await log.checkpoints.create(record(checkpoint_id="p"))
        child = await log.checkpoints.create(record(checkpoint_id="c", parent_id="p"))
        assert "p" == child.parent_id

    async def test_views_match_a_rebuild_after_creates_and_deletes(self, log: OpenLog) -> None:
        """The inline views equal a rebuild from the log after a mixed history."""
        await log.checkpoints.create(record(session="a", checkpoint_id="c", metadata={"m": 1.5}))
        await log.checkpoints.create(record(session="a", checkpoint_id="d", parent_id="c"))
        await log.checkpoints.create(record(session="b", checkpoint_id="c", state=b"bytes"))
        await log.checkpoints.delete("t", "a")
        await log.checkpoints.create(record(session="a", checkpoint_id="e"))
        await settle(log)
        assert [] == await compare_views(log)

    async def test_views_survive_reopening_the_store(self, backend: ContractBackend) -> None:
        """Closing and reopening (file: rebuilding views from the log) keeps every answer."""
        backend.require_persistent()
        async with backend.open() as log:
            await log.checkpoints.create(record(checkpoint_id="a", state={"v": 1}))
            await log.checkpoints.create(record(checkpoint_id="b", parent_id="a", state=b"raw"))
            before = await log.checkpoints.list("t", "s")
        async with backend.open() as log:
            after = await log.checkpoints.list("t", "s")
            states = [await log.checkpoints.read("t", "s", c) for c in ("a", "b")]
        assert (before, [{"v": 1}, b"raw"]) == (after, states)

    async def test_create_and_delete_log_what_they_did(self, log: OpenLog) -> None:
        """create logs ``created`` (debug) and delete logs ``deleted`` (info) with their facts."""
        with capture_logs() as logs:
            created = await log.checkpoints.create(record(checkpoint_id="c"))
            await log.checkpoints.delete("t", "s")
        mine = [entry for entry in logs if entry["event"] in ("created", "deleted")]
        assert [
            {"event": "created", "log_level": "debug", "tenant": "t", "session": "s",
             "checkpoint": "c", "position": created.position},
            {"event": "deleted", "log_level": "info", "tenant": "t", "session": "s",
             "checkpoints": 1},
        ] == mine
