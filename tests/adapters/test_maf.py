"""A real Agent Framework workflow (plain-Python executors) checkpointing on the event log.

The shared scenario runs against our storage on SQLite and PostgreSQL and against MAF's
own `InMemoryCheckpointStorage` and `FileCheckpointStorage`, so it checks the framework's
contract, not just ours. Where MAF's stores are wrong (they order by timestamp; the file
store lists in directory order), the test says so with a strict xfail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    CheckpointStorage,
    Executor,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowCheckpointException,
    WorkflowContext,
    WorkflowRunState,
    handler,
    register_checkpoint_type,
    response_handler,
)

from eventlog import open_log
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.checkpoints import Payload, ThreadCheckpointPut
from eventlog.crypto import init_keyring
from tests.citus import cluster
from tests.conftest import (
    CITUS,
    PG_URL,
    SEALED_POSTGRESQL,
    SEALED_SQLITE,
    drop_schema,
    fresh_id,
    require_postgres,
)

TENANT = "acme"


@dataclass
class Approval:
    """What the workflow asks a human."""

    amount: int


register_checkpoint_type(Approval)  # a pending request carries it: decoding must allow it


@dataclass
class Unregistered:
    """A type nobody allowed MAF's checkpoint decoding to restore."""

    x: int


class Plan(Executor):
    @handler
    async def start(self, order: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(len(order) * 10)


class Ask(Executor):
    @handler
    async def ask(self, amount: int, ctx: WorkflowContext) -> None:
        await ctx.request_info(Approval(amount), str)

    @response_handler
    async def answered(
        self, original: Approval, answer: str, ctx: WorkflowContext[None, str]
    ) -> None:
        await ctx.yield_output(f"{original.amount}: {answer}")


def build(storage: CheckpointStorage, name: str = "payments") -> Workflow:
    plan, ask = Plan(id="plan"), Ask(id="ask")
    return WorkflowBuilder(
        name=name, start_executor=plan, checkpoint_storage=storage
    ).add_edge(plan, ask).build()


Opener = Callable[..., AbstractAsyncContextManager[CheckpointStorage]]


@dataclass
class Store:
    """One storage kind: how to (re)open it, and which contract clauses it keeps."""

    name: str
    open: Opener
    tenants: bool = True
    log_order: bool = True
    ordered_lists: bool = True


@pytest.fixture(params=["sqlite", "postgresql", "maf-memory", "maf-file", CITUS,
                        SEALED_SQLITE, SEALED_POSTGRESQL])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A storage kind that a "restarted process" can open again (ours also encrypted, in
    the sealed campaign)."""
    name = request.param
    sealed = ({"keyring": str(init_keyring(tmp_path / "keyring.json").path)}
              if name.endswith("-sealed") else {})
    if name.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'log.db'}"
        yield Store(name, _eventlog(url, sealed))
    elif name.startswith("postgresql"):
        require_postgres()
        schema = f"t_{fresh_id('maf').replace('-', '_')}"
        yield Store(name, _eventlog(PG_URL, {"schema": schema, **sealed}))
        await drop_schema(schema)
    elif name == "citus":
        cluster.ensure_cluster()
        schema = cluster.fresh_schema()
        yield Store(name, _eventlog(cluster.URL, {"schema": schema, "distributed": True}))
        await cluster.drop_schema(schema)
    elif name == "maf-memory":
        memories: dict[str, InMemoryCheckpointStorage] = {}

        @asynccontextmanager
        async def memory(tenant_id: str = TENANT) -> AsyncIterator[CheckpointStorage]:
            yield memories.setdefault(tenant_id, InMemoryCheckpointStorage())

        yield Store(name, memory, tenants=False, log_order=False)
    else:
        @asynccontextmanager
        async def files(tenant_id: str = TENANT) -> AsyncIterator[CheckpointStorage]:
            yield FileCheckpointStorage(tmp_path / tenant_id)

        yield Store(name, files, tenants=False, log_order=False, ordered_lists=False)


def _eventlog(url: str, options: dict[str, Any]) -> Opener:
    @asynccontextmanager
    async def opened(tenant_id: str = TENANT) -> AsyncIterator[CheckpointStorage]:
        async with EventlogCheckpointStorage.from_url(
            url, tenant_id=tenant_id, **options
        ) as storage:
            yield storage

    return opened


async def _verified(storage: CheckpointStorage) -> None:
    """On the event log, every chain and view checks out (MAF's stores have none)."""
    if isinstance(storage, EventlogCheckpointStorage):
        report = await storage.log.verify()
        assert report.ok, report


def checkpoint(name: str = "payments", **fields: Any) -> WorkflowCheckpoint:
    return WorkflowCheckpoint(workflow_name=name, graph_signature_hash="g", **fields)


async def test_a_workflow_pauses_restarts_and_resumes(store: Store) -> None:
    """It pauses on request_info; a new workflow over a reopened storage resumes from the
    stored checkpoint with the human's answer and publishes."""
    async with store.open() as storage:
        paused = await build(storage).run("order")
        assert WorkflowRunState.IDLE_WITH_PENDING_REQUESTS == paused.get_final_state()
        request = paused.get_request_info_events()[0]
    async with store.open() as storage:  # the process restarted
        latest = await storage.get_latest(workflow_name="payments")
        assert latest is not None
        assert [request.request_id] == list(latest.pending_request_info_events)
        done = await build(storage).run(
            checkpoint_id=latest.checkpoint_id, responses={request.request_id: "yes"}
        )
        assert WorkflowRunState.IDLE == done.get_final_state()
        assert ["50: yes"] == done.get_outputs()
        saved = await storage.list_checkpoints(workflow_name="payments")
        assert [c.checkpoint_id for c in saved] == await storage.list_checkpoint_ids(
            workflow_name="payments")
        if store.ordered_lists:  # oldest first: each names the one before it
            assert [None, *[c.checkpoint_id for c in saved[:-1]]] == [
                c.previous_checkpoint_id for c in saved]
        await _verified(storage)


async def test_save_stores_a_snapshot_and_load_returns_a_copy(store: Store) -> None:
    """Mutating the saved object, or a loaded one, changes nothing stored."""
    async with store.open() as storage:
        original = checkpoint(state={"n": 1})
        assert original.checkpoint_id == await storage.save(original)
        original.state["n"] = 2
        loaded = await storage.load(original.checkpoint_id)
        loaded.state["n"] = 3
        assert {"n": 1} == (await storage.load(original.checkpoint_id)).state
        if isinstance(storage, EventlogCheckpointStorage):  # the sealed stores are encrypted
            assert store.name.endswith("-sealed") == (storage.log.sealer is not None)


async def test_saving_an_id_again_replaces_it_and_lists_it_once(store: Store) -> None:
    """Load returns the second save; the id is listed once."""
    async with store.open() as storage:
        first = checkpoint(state={"v": 1})
        await storage.save(first)
        await storage.save(dataclasses.replace(first, state={"v": 2}))
        assert {"v": 2} == (await storage.load(first.checkpoint_id)).state
        assert [first.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="payments")


async def test_delete_answers_true_once_then_false(store: Store) -> None:
    """A deleted checkpoint is unknown to load, lists and latest; delete again is False."""
    async with store.open() as storage:
        kept, gone = checkpoint(), checkpoint()
        await storage.save(kept)
        await storage.save(gone)
        assert await storage.delete(gone.checkpoint_id)
        assert not await storage.delete(gone.checkpoint_id)
        with pytest.raises(WorkflowCheckpointException):
            await storage.load(gone.checkpoint_id)
        assert [kept.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="payments")
        latest = await storage.get_latest(workflow_name="payments")
        assert latest is not None
        assert kept.checkpoint_id == latest.checkpoint_id
        await _verified(storage)


async def test_a_deleted_id_can_be_saved_again(store: Store) -> None:
    """Re-saving a deleted id brings it back with the new contents."""
    async with store.open() as storage:
        again = checkpoint(state={"v": 1})
        await storage.save(again)
        assert await storage.delete(again.checkpoint_id)
        await storage.save(dataclasses.replace(again, state={"v": 2}))
        assert {"v": 2} == (await storage.load(again.checkpoint_id)).state
        assert [again.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="payments")


async def test_unknown_ids_are_unknown(store: Store) -> None:
    """Load raises MAF's exception, delete answers False, an empty workflow has no latest."""
    async with store.open() as storage:
        with pytest.raises(WorkflowCheckpointException):
            await storage.load("no-such-checkpoint")
        assert not await storage.delete("no-such-checkpoint")
        assert await storage.get_latest(workflow_name="nobody") is None
        assert [] == await storage.list_checkpoints(workflow_name="nobody")


async def test_workflow_names_are_kept_apart(store: Store) -> None:
    """Lists and latest are per workflow name; load needs no name."""
    async with store.open() as storage:
        a, b = checkpoint("alpha"), checkpoint("beta")
        await storage.save(a)
        await storage.save(b)
        assert [a.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="alpha")
        assert [b.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="beta")
        assert "beta" == (await storage.load(b.checkpoint_id)).workflow_name


async def test_tenants_are_walls(store: Store) -> None:
    """Another tenant's storage cannot load, list, see as latest or delete a checkpoint."""
    if not store.tenants:
        pytest.skip(f"{store.name} has no tenants")
    async with store.open(tenant_id="acme") as acme, store.open(tenant_id="other") as other:
        mine = checkpoint()
        await acme.save(mine)
        with pytest.raises(WorkflowCheckpointException):
            await other.load(mine.checkpoint_id)
        assert not await other.delete(mine.checkpoint_id)
        assert [] == await other.list_checkpoint_ids(workflow_name="payments")
        assert await other.get_latest(workflow_name="payments") is None
        assert mine.checkpoint_id == (await acme.load(mine.checkpoint_id)).checkpoint_id


@pytest.mark.parametrize("second_timestamp", ["same", "earlier"])
async def test_latest_is_the_last_saved_whatever_the_timestamps(
    store: Store, second_timestamp: str, request: pytest.FixtureRequest
) -> None:
    """Two saves with the same timestamp, or a clock stepping back: latest is the last
    saved and lists are oldest first, by save order."""
    if not store.log_order:
        request.applymarker(pytest.mark.xfail(
            strict=True, reason=f"{store.name} orders latest by timestamp"))
    stamp = "2030-01-01T12:00:00+00:00"
    second_stamp = stamp if second_timestamp == "same" else "2029-12-31T12:00:00+00:00"
    async with store.open() as storage:
        first = checkpoint(timestamp=stamp)
        second = checkpoint(timestamp=second_stamp, previous_checkpoint_id=first.checkpoint_id)
        await storage.save(first)
        await storage.save(second)
        latest = await storage.get_latest(workflow_name="payments")
        assert latest is not None
        assert second.checkpoint_id == latest.checkpoint_id
        assert [first.checkpoint_id, second.checkpoint_id] == await storage.list_checkpoint_ids(
            workflow_name="payments")


# -- what only the event log gives -----------------------------------------------------


async def test_delete_is_a_tombstone_that_purges_the_state(tmp_path: Path) -> None:
    """After a delete the blob is gone, the events stay and the chain verifies."""
    async with open_log(f"sqlite:///{tmp_path / 'l.db'}") as log:
        storage = EventlogCheckpointStorage(log, tenant_id=TENANT)
        gone = checkpoint(state={"secret": "card 4242"})
        await storage.save(gone)
        [put] = [event.event async for event in log.read_stream(TENANT, "thread:payments")]
        assert isinstance(put, ThreadCheckpointPut)
        digest = bytes.fromhex(put.state_digest)
        assert b"card 4242" in (await log.get_blobs(TENANT, [digest]))[digest]
        assert await storage.delete(gone.checkpoint_id)
        assert {} == await log.get_blobs(TENANT, [digest])
        assert ["thread_checkpoint_put", "thread_checkpoints_removed"] == [
            event.type async for event in log.read_stream(TENANT, "thread:payments")]
        assert (await log.verify()).ok


async def test_a_langgraph_thread_of_the_same_name_stays_apart(tmp_path: Path) -> None:
    """Another adapter's checkpoints in the thread are not listed, latest or loadable."""
    async with open_log(f"sqlite:///{tmp_path / 'l.db'}") as log:
        storage = EventlogCheckpointStorage(log, tenant_id=TENANT)
        ours = checkpoint()
        await storage.save(ours)
        await log.checkpoints.threads.put(
            TENANT, "payments", "lg-1", state=Payload("json", b"{}"), run_key="run-1")
        assert [ours.checkpoint_id] == await storage.list_checkpoint_ids(workflow_name="payments")
        latest = await storage.get_latest(workflow_name="payments")
        assert latest is not None
        assert ours.checkpoint_id == latest.checkpoint_id
        with pytest.raises(WorkflowCheckpointException):
            await storage.load("lg-1")
        assert not await storage.delete("lg-1")


async def test_an_id_saved_under_another_name_loads_as_its_last_save(tmp_path: Path) -> None:
    """MAF ids are global: load returns the last save of the id, whichever workflow."""
    async with EventlogCheckpointStorage.from_url(f"sqlite:///{tmp_path / 'l.db'}") as storage:
        first = checkpoint("alpha")
        await storage.save(first)
        await storage.save(dataclasses.replace(first, workflow_name="beta"))
        assert "beta" == (await storage.load(first.checkpoint_id)).workflow_name
        assert await storage.delete(first.checkpoint_id)
        assert [] == await storage.list_checkpoint_ids(workflow_name="alpha")
        assert [] == await storage.list_checkpoint_ids(workflow_name="beta")


async def test_an_undecodable_type_is_refused_at_save(tmp_path: Path) -> None:
    """A value MAF's restricted decoding would refuse fails the save, not a later load."""
    async with EventlogCheckpointStorage.from_url(f"sqlite:///{tmp_path / 'l.db'}") as storage:
        with pytest.raises(WorkflowCheckpointException):
            await storage.save(checkpoint(state={"v": Unregistered(1)}))
        assert [] == await storage.list_checkpoint_ids(workflow_name="payments")


def test_timeline_and_verify_show_a_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``eventlog timeline TENANT WORKFLOW`` tells the workflow's story; verify passes."""
    import asyncio

    from eventlog.cli import EXIT_OK, main

    url = f"sqlite:///{tmp_path / 'l.db'}"

    async def scenario() -> None:
        async with EventlogCheckpointStorage.from_url(url, tenant_id=TENANT) as storage:
            paused = await build(storage).run("order")
            request = paused.get_request_info_events()[0]
            latest = await storage.get_latest(workflow_name="payments")
            assert latest is not None
            await build(storage).run(
                checkpoint_id=latest.checkpoint_id, responses={request.request_id: "no"})
            assert await storage.delete(latest.checkpoint_id)

    asyncio.run(scenario())
    capsys.readouterr()
    assert EXIT_OK == main(["timeline", "--url", url, "--json", TENANT, "payments"])
    story = capsys.readouterr().out
    assert '"checkpoint"' in story
    assert "deleted" in story
    assert EXIT_OK == main(["verify", "--url", url])
