"""Hypothesis: the checkpoint store against a pure model, on every backend.

Generated workflows: sessions whose runs write a checkpoint per step, crash at any step
and resume from an earlier checkpoint (a new run replaying the following steps, with the
same checkpoint ids or store-minted new ones), sometimes from a checkpoint that is not
theirs to resume from (another tenant's, another session's, a deleted one), and
occasional deletes. Three properties:

1. At-least-once replay: every read agrees with the model — ``list`` is every record
   since the last delete in write order, duplicates included; ``list_by_run`` partitions
   them by run; ``latest`` is the last written; ``index(parent_id=p)`` the children of p;
   ``read`` the state last written for an id; ``runs``, ``sessions`` and the blob reference
   counts follow.
2. Views are a function of the log: after each example the tenant's views equal a
   rebuild from its events, and folding those events into the stored views again
   (at-least-once delivery; on SQL backends by executing the very statements the
   backend applies inline) changes nothing. After all examples, `compare_views` over the
   whole store is empty.
3. Tenants never see each other: two tenants with the same session and checkpoint ids,
   interleaved, each agree with a model that knows nothing of the other.

Examples share one open store per backend (fresh tenants per example). Example counts,
chosen to keep this file near a minute in CI on two cores: the active profile's (200 under
CI) for all three properties on memory and for property 1 on SQLite; at most 50 for
properties 2 and 3 on SQLite; at most 25 on the file store and PostgreSQL. At most 10
steps per example, a step writing up to four checkpoints.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import msgspec
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    rule,
    run_state_machine_as_test,
)

from eventlog import CheckpointRecord, EventLog, InvalidInput, open_log
from eventlog.checkpoints import RunInfo, SessionInfo
from eventlog.checkpoints.decisions import check_record, encode_state, parent_required
from eventlog.hashing import uncounted
from eventlog.records import RecordedEvent
from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import SqliteBackend
from projections import ViewQuery, compare_views, fold_events
from projections.rebuilding import diff_snapshots
from projections.views import key_columns
from tests.conftest import BackendTarget
from tests.procs.settle import settle
from tests.properties.sql_changes import apply_changes

# Model-based runs: 200 examples each under CI=true, minutes in all (pytest -m properties).
pytestmark = pytest.mark.properties

T = TypeVar("T")

SESSIONS = ("s0", "s1")
SMALL_BACKENDS = ("file", "postgresql")  # slower per step: fewer examples
STEPS = 10

json_leaves = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
repeated = st.sampled_from([{"same": 1}, b"same", None, []])  # shared blobs, often
states = st.one_of(repeated, repeated, json_values, st.binary(max_size=16))
# Metadata holds no NUL (refused up front: PostgreSQL's jsonb cannot hold one) and, as
# JSON text, no lone surrogate (what st.text() leaves out by default and st.characters()
# does not).
metadata_chars = st.characters(codec="utf-8", exclude_characters="\x00")
metadata_text = st.text(metadata_chars, max_size=8)
metadatas = st.dictionaries(
    st.text(metadata_chars, max_size=4),
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | metadata_text,
    max_size=2,
)
id_modes = st.sampled_from(["derived", "minted"])


@dataclass
class Run:
    """A run in progress: where its next step writes and what it names as parent."""

    run_id: uuid.UUID
    next_step: int
    parent_id: str | None
    id_mode: str


@dataclass
class TenantModel:
    """What one tenant's reads must answer: live records per session, in write order."""

    sessions: dict[str, list[CheckpointRecord]] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)

    def live(self, session: str) -> list[CheckpointRecord]:
        return self.sessions.setdefault(session, [])

    def all_live(self) -> list[CheckpointRecord]:
        records = [r for session in SESSIONS for r in self.live(session)]
        return sorted(records, key=lambda r: r.position or 0)

    def parent_ok(self, session: str, parent_id: str | None) -> bool:
        return parent_id is None or any(r.checkpoint_id == parent_id for r in self.live(session))


def listed(record: CheckpointRecord) -> CheckpointRecord:
    """A created record as list-like reads return it (state not read)."""
    return msgspec.structs.replace(record, state=None)


def expected_runs(records: list[CheckpointRecord]) -> list[RunInfo]:
    """The runs view of one session: each run once, by first record, in start order."""
    first: dict[uuid.UUID, CheckpointRecord] = {}
    for record in records:
        first.setdefault(record.run_id, record)
    return [
        RunInfo(tenant_id=r.tenant_id, session_id=r.session_id, run_id=r.run_id,
                first_checkpoint_id=str(r.checkpoint_id), first_parent_id=r.parent_id,
                first_step=r.step, first_position=r.position or 0,
                started_at=r.recorded_at)  # type: ignore[arg-type]
        for r in first.values()
    ]


def expected_session(records: list[CheckpointRecord]) -> SessionInfo:
    """The sessions-view row of a session whose live records are ``records``."""
    last = records[-1]
    return SessionInfo(
        tenant_id=last.tenant_id, session_id=last.session_id,
        latest_checkpoint_id=str(last.checkpoint_id), latest_run_id=last.run_id,
        latest_step=last.step, latest_position=last.position or 0,
        updated_at=last.recorded_at,  # type: ignore[arg-type]
    )


def expected_refs(model: TenantModel) -> tuple[dict[bytes, int], set[bytes]]:
    """Blob references a tenant must hold: one per live record, by state digest; and the
    digests of live states of at most `TOLD_BY_DIGEST` bytes (``[]``, ``1``), which are
    stored but never counted."""
    refs: dict[bytes, int] = {}
    told: set[bytes] = set()
    for record in model.all_live():
        encoded = encode_state(record.state, 1 << 30)
        if uncounted(encoded.data):
            told.add(encoded.digest)
        else:
            refs[encoded.digest] = refs.get(encoded.digest, 0) + 1
    return refs, told


def check_refs(expected: tuple[dict[bytes, int], set[bytes]], stored: dict[bytes, int]
               ) -> None:
    """The stored counts are the model's; each live uncounted blob is stored at 0 (one a
    deleted record left may stay: it is never purged)."""
    refs, told = expected
    assert refs == {digest: count for digest, count in stored.items() if count}
    assert {digest: stored.get(digest) for digest in told} == dict.fromkeys(told, 0)


class CheckpointMachine(RuleBasedStateMachine):
    """Workflows against the store and `TenantModel`; configured per test by `machine`."""

    log: ClassVar[EventLog]
    runner: ClassVar[asyncio.Runner]
    tenant_count: ClassVar[int] = 1
    check_views: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        prefix = uuid.uuid4().hex[:10]
        self.tenants = [f"{prefix}-{n}" for n in range(self.tenant_count)]
        self.models = {tenant: TenantModel() for tenant in self.tenants}
        self.stray_ids: list[str] = ["never-written"]

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coroutine)

    # -- rules ---------------------------------------------------------------------------

    @rule(tenant=st.integers(0, 1), session=st.sampled_from(SESSIONS), id_mode=id_modes,
          origin=st.sampled_from(["scratch", "earlier", "earlier", "stray"]),
          pick=st.integers(0, 1000))
    def crash_and_resume(
        self, tenant: int, session: str, id_mode: str, origin: str, pick: int
    ) -> None:
        """The current run crashes; a new run starts from scratch, or resumes from an
        earlier checkpoint of the session, or (wrongly) from one that is not the session's:
        then its steps must be refused. Resumed steps reuse the original step ids
        (``derived``) or get new store-minted ones."""
        model = self.models[self.tenants[tenant % self.tenant_count]]
        live = model.live(session)
        if origin == "earlier" and live:
            resumed = live[pick % len(live)]
            model.runs[session] = Run(uuid.uuid4(), resumed.step + 1, resumed.checkpoint_id,
                                      id_mode)
        elif origin == "stray":
            parent = self.stray_ids[pick % len(self.stray_ids)]
            model.runs[session] = Run(uuid.uuid4(), pick % 4, parent, id_mode)
        else:
            model.runs[session] = Run(uuid.uuid4(), 0, None, id_mode)

    @rule(tenant=st.integers(0, 1), session=st.sampled_from(SESSIONS),
          written=st.lists(st.tuples(states, metadatas), min_size=1, max_size=4))
    def steps(self, tenant: int, session: str, written: list[tuple[Any, dict[str, Any]]]) -> None:
        """The session's current run writes a checkpoint for each of its next steps."""
        tenant_id = self.tenants[tenant % self.tenant_count]
        for state, metadata in written:
            self.step(tenant_id, session, state, metadata)

    def step(self, tenant_id: str, session: str, state: Any, metadata: dict[str, Any]) -> None:
        """One step: create its checkpoint, or see it refused when its parent is not valid."""
        model = self.models[tenant_id]
        run = model.runs.setdefault(session, Run(uuid.uuid4(), 0, None, "derived"))
        request = CheckpointRecord(
            tenant_id=tenant_id, session_id=session, run_id=run.run_id,
            checkpoint_id=f"step-{run.next_step}" if run.id_mode == "derived" else None,
            parent_id=run.parent_id, step=run.next_step, state=state, metadata=metadata,
        )
        if not model.parent_ok(session, run.parent_id):
            self.expect_parent_refused(request)
            return
        created = self.run(self.log.checkpoints.create(request))
        assert request.checkpoint_id in (None, created.checkpoint_id)
        assert created.checkpoint_id is not None
        model.live(session).append(created)
        self.stray_ids.append(created.checkpoint_id)
        run.next_step, run.parent_id = run.next_step + 1, created.checkpoint_id

    @rule(pick=st.integers(0, 1000))
    def delete(self, pick: int) -> None:
        """A session is deleted (one with checkpoints, when there is one): every live record
        goes, and the count says how many."""
        pairs = [(t, s) for t in self.tenants for s in SESSIONS]
        written = [(t, s) for t, s in pairs if self.models[t].live(s)]
        tenant_id, session = (written or pairs)[pick % len(written or pairs)]
        model = self.models[tenant_id]
        removed = self.run(self.log.checkpoints.delete(tenant_id, session))
        assert len(model.live(session)) == removed
        model.sessions[session] = []

    @rule(tenant=st.integers(0, 1), session=st.sampled_from(SESSIONS))
    def check_session(self, tenant: int, session: str) -> None:
        """Mid-history, a session lists, reads and answers latest as the model says (the
        full check runs at the end of every example)."""
        tenant_id = self.tenants[tenant % self.tenant_count]
        live, store = self.models[tenant_id].live(session), self.log.checkpoints
        assert [listed(r) for r in live] == self.run(store.list(tenant_id, session))
        latest = self.run(store.latest(tenant_id, session))
        assert (listed(live[-1]) if live else None) == latest
        self.check_reads(tenant_id, session, {self.stray_ids[-1]})

    # -- checks --------------------------------------------------------------------------

    def expect_parent_refused(self, request: CheckpointRecord) -> None:
        """A create naming a parent that is not this session's is refused, with exactly
        the message an unknown parent gets, and writes nothing."""
        before = self.run(self.log.checkpoints.list(request.tenant_id, request.session_id))
        with pytest.raises(InvalidInput) as raised:
            self.run(self.log.checkpoints.create(request))
        (required,) = parent_required(check_record(request, 10**6))
        assert str(InvalidInput(required.field, required.reason)) == str(raised.value)
        assert before == self.run(self.log.checkpoints.list(request.tenant_id, request.session_id))

    def check(self, tenant_id: str, session: str) -> None:
        """Every read of one session (and its runs) against the model."""
        model, store = self.models[tenant_id], self.log.checkpoints
        live = model.live(session)
        assert [listed(r) for r in live] == self.run(store.list(tenant_id, session))
        latest = self.run(store.latest(tenant_id, session))
        assert (listed(live[-1]) if live else None) == latest
        assert expected_runs(live) == self.run(store.runs(tenant_id, session))
        for run_id in {r.run_id for r in live}:
            everywhere = [listed(r) for r in model.all_live() if r.run_id == run_id]
            assert everywhere == self.run(store.list_by_run(tenant_id, run_id))
        for parent in {r.parent_id for r in live if r.parent_id} | {"never-written"}:
            children = [listed(r) for r in live if r.parent_id == parent]
            assert children == self.run(store.index(tenant_id, session, parent_id=parent))
        self.check_reads(tenant_id, session, {*self.stray_ids[:2], *self.stray_ids[-6:]})

    def check_reads(self, tenant_id: str, session: str, others: set[str]) -> None:
        """``read`` of every id live in the session and of ``others`` (ids written anywhere,
        some since deleted): the state last written under that id in this tenant's
        session, else None."""
        live = self.models[tenant_id].live(session)
        for checkpoint_id in {str(r.checkpoint_id) for r in live} | others:
            written = [r.state for r in live if r.checkpoint_id == checkpoint_id]
            expected = written[-1] if written else None
            found = self.run(self.log.checkpoints.read(tenant_id, session, checkpoint_id))
            assert expected == found

    def check_tenant(self, tenant_id: str) -> None:
        """Every session of a tenant, its sessions page and its blob references."""
        model = self.models[tenant_id]
        for session in SESSIONS:
            self.check(tenant_id, session)
        wanted = [expected_session(model.live(s)) for s in SESSIONS if model.live(s)]
        assert wanted == self.run(self.log.checkpoints.sessions(tenant_id))
        check_refs(expected_refs(model), dict(self.run(self.log.storage.blob_refs(tenant_id))))

    def teardown(self) -> None:
        for tenant_id in self.tenants:
            if self.check_views:  # property 2; property 1 runs the same machine for the rest
                self.run(check_views_are_a_fold(self.log, tenant_id))
            else:
                self.check_tenant(tenant_id)


# -- property 2: the views are a function of the log ---------------------------------------


async def tenant_events(log: EventLog, tenant_id: str) -> list[RecordedEvent]:
    """Every event of one tenant, in log order."""
    await settle(log)
    events: list[RecordedEvent] = []
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=1000, tenant_id=tenant_id)
        if not page.events:
            return events
        events += page.events
        cursor = page.cursor


async def stored_views(log: EventLog, tenant_id: str) -> dict[str, list[dict[str, Any]]]:
    """One tenant's rows of every view table, as stored."""
    return {
        table: await log.storage.query(ViewQuery(table, {"tenant_id": tenant_id}))
        for table in key_columns()
    }


async def fold_again(log: EventLog, events: list[RecordedEvent]) -> None:
    """Deliver ``events`` to the stored views a second time, as the backend applies them."""
    storage = log.storage
    if not isinstance(storage, PostgresBackend | SqliteBackend):
        fold_events(log.projections, events, storage.views)  # type: ignore[attr-defined]
        return
    await apply_changes(storage, [
        (change, event.position)
        for event in events for projection in log.projections
        for change in projection.fold(event)
    ])


async def check_views_are_a_fold(log: EventLog, tenant_id: str) -> None:
    """The tenant's views equal a rebuild from its events, and survive a second delivery."""
    events = await tenant_events(log, tenant_id)
    rebuilt = fold_events(log.projections, events).snapshot()
    before = await stored_views(log, tenant_id)
    assert [] == diff_snapshots(rebuilt, before)
    await fold_again(log, events)
    assert [] == diff_snapshots(before, await stored_views(log, tenant_id))


# -- running the machines ------------------------------------------------------------------


@contextmanager
def machine(
    target: BackendTarget, *, tenants: int, check_views: bool = False, sqlite_cap: int | None = None
) -> Iterator[tuple[type[CheckpointMachine], settings]]:
    """A machine class bound to one open store on ``target``, and the settings to run it."""
    with asyncio.Runner() as runner:
        opened = open_log(target.url, **target.options())
        log = runner.run(opened.__aenter__())
        try:
            bound = type("BoundCheckpointMachine", (CheckpointMachine,), {
                "log": log, "runner": runner, "tenant_count": tenants,
                "check_views": check_views,
            })
            examples = settings.default.max_examples
            if target.name in SMALL_BACKENDS:
                examples = min(examples, 25)
            elif target.name == "sqlite" and sqlite_cap is not None:
                examples = min(examples, sqlite_cap)
            yield bound, settings(max_examples=examples, stateful_step_count=STEPS)
            if check_views:
                runner.run(settle(log))
                assert [] == runner.run(compare_views(log))
        finally:
            runner.run(opened.__aexit__(None, None, None))


def test_at_least_once_replay_matches_the_model(target: BackendTarget) -> None:
    """Property 1: crash/resume/delete workflows read back exactly as the model says."""
    with machine(target, tenants=1) as (bound, config):
        run_state_machine_as_test(bound, settings=config)


def test_views_are_a_function_of_the_log(target: BackendTarget) -> None:
    """Property 2: views equal a rebuild, and a second delivery of the log changes nothing."""
    with machine(target, tenants=1, check_views=True, sqlite_cap=50) as (bound, config):
        run_state_machine_as_test(bound, settings=config)


def test_tenants_never_see_each_other(target: BackendTarget) -> None:
    """Property 3: two interleaved tenants with the same ids each match their own model."""
    with machine(target, tenants=2, sqlite_cap=50) as (bound, config):
        run_state_machine_as_test(bound, settings=config)
