"""The forensic commands on real framework threads (tests/forensic_threads.py): what they
say is checked against what the graph or workflow did."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import open_log
from eventlog.checkpoints.elements import ELEMENTS_ENCODING
from eventlog.checkpoints.thread_records import Elements
from eventlog.cli import EXIT_OK
from projections.query import ViewQuery
from projections.threads import THREAD_VALUES, THREAD_WRITES
from tests.cli.helpers import Run, make_runner, tenant_events
from tests.conftest import CITUS, BackendTarget
from tests.forensic_threads import (
    ANSWER,
    CRASH,
    QUESTION,
    Written,
    written_on,
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql", CITUS])
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Written]:
    """The threads on each backend, for reading only."""
    yield from written_on(request.param, tmp_path_factory)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], written: Written) -> Run:
    """``eventlog ARGS`` against the threads' log."""
    return make_runner(capsys, written.target)


def _story(run: Run, tenant: str, thread: str) -> dict[str, Any]:
    ran = run("timeline", "--json", tenant, thread)
    assert EXIT_OK == ran.status, ran.err
    stories = ran.json()["threads"]
    assert 1 == len(stories)
    return dict(stories[0])


def _wide(run: Run, *args: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "400")
    ran = run(*args)
    assert EXIT_OK == ran.status, ran.err
    return ran.out


# -- timeline ------------------------------------------------------------------------------


def test_timeline_names_the_nodes_in_the_order_they_ran(written: Written, run: Run) -> None:
    """Each step names the nodes that ran in it (LangGraph's ``__start__`` aside)."""
    trip = written.threads.interrupted
    story = _story(run, trip.tenant, trip.thread_id)
    ran = [node for step in story["steps"] for node in step["nodes"] if node != "__start__"]
    assert trip.nodes == ran


def test_timeline_tells_steps_with_their_source(written: Written, run: Run) -> None:
    """Each checkpoint of the history carries its step number and LangGraph's source."""
    trip = written.threads.interrupted
    story = _story(run, trip.tenant, trip.thread_id)
    told = {s["checkpoint_id"]: (s["step"], s["source"]) for s in story["steps"]}
    assert [(-1, "input"), (0, "loop"), (1, "loop"), (2, "loop"), (3, "loop")] == [
        told[checkpoint_id] for checkpoint_id in trip.checkpoint_ids]


def test_timeline_matches_the_question_with_its_answer(written: Written, run: Run) -> None:
    """The interrupt's node and value come with the Command(resume=...) that answered it."""
    trip = written.threads.interrupted
    story = _story(run, trip.tenant, trip.thread_id)
    assert [(trip.interrupt_node, trip.question, True, trip.answer)] == [
        (q["node"], q["value"], q["answered"], q["answer"]) for q in story["questions"]]


def test_timeline_shows_the_question_and_answer_not_channel_indexes(
    written: Written, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """People read the question and the answer, never ``__interrupt__[-3]``."""
    trip = written.threads.interrupted
    out = _wide(run, "timeline", trip.tenant, trip.thread_id, monkeypatch=monkeypatch)
    assert (True, True, False, False) == (
        QUESTION["question"] in out, ANSWER in out, "__interrupt__[" in out, "0 runs" in out)


def test_timeline_marks_the_fork_and_its_branch_point(written: Written, run: Run) -> None:
    """update_state on an earlier checkpoint is a fork from that checkpoint."""
    forked = written.threads.forked
    story = _story(run, forked.tenant, forked.thread_id)
    forks = [(s["checkpoint_id"], s["fork_of"], s["source"]) for s in story["steps"]
             if s["fork_of"] is not None]
    assert [(forked.fork_id, forked.fork_from, "update")] == forks


def test_timeline_draws_the_fork_in_the_checkpoint_tree(
    written: Written, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tree opens a branch at the fork point holding the fork's checkpoint."""
    forked = written.threads.forked
    out = _wide(run, "timeline", forked.tenant, forked.thread_id, monkeypatch=monkeypatch)
    tree = out[out.index("checkpoints of"):].splitlines()
    branch = next(i for i, line in enumerate(tree) if f"forked from {forked.fork_from}" in line)
    assert (True, True) == (forked.fork_id in tree[branch + 1], "FORK" in tree[branch + 1])


def test_timeline_puts_a_subgraph_in_its_own_lane(written: Written, run: Run) -> None:
    """A subgraph's checkpoints are its namespace's lane; its question is asked there."""
    nested = written.threads.subgraph
    story = _story(run, nested.tenant, nested.thread_id)
    lane_nodes = {n for s in story["steps"] if s["namespace"] == nested.namespaces[0]
                  for n in s["nodes"]}
    assert (["", *nested.namespaces], [nested.namespaces[0]], True) == (
        story["namespaces"], [q["namespace"] for q in story["questions"]],
        nested.interrupt_node in lane_nodes)


def test_timeline_marks_the_step_that_never_finished(written: Written, run: Run) -> None:
    """After a crash the checkpoint whose step failed is marked, naming who raised what
    and whose writes stay pending."""
    crashed = written.threads.crashed
    story = _story(run, crashed.tenant, crashed.thread_id)
    unfinished = [(s["checkpoint_id"], s["unfinished"]) for s in story["steps"]
                  if s["unfinished"] is not None]
    assert 1 == len(unfinished)
    checkpoint_id, why = unfinished[0]
    assert (crashed.unfinished_checkpoint, True, True, True) == (
        checkpoint_id, str(crashed.failed) in why, CRASH in why, str(crashed.wrote) in why)


def test_timeline_tells_a_workflow_in_its_own_words(written: Written, run: Run) -> None:
    """An Agent Framework workflow: its executors, and the request for a human with the
    answer that resumed it."""
    workflow = written.threads.workflow
    story = _story(run, workflow.tenant, workflow.workflow)
    executors = {n for s in story["steps"] for n in s["nodes"]}
    asked = [(q["node"], q["id"], q["value"]["amount"], q["answer"])
             for q in story["questions"]]
    assert (["Agent Framework"], set(workflow.executors),
            [("ask", workflow.request_id, workflow.question.amount, workflow.answer)]) == (
        story["frameworks"], executors, asked)


def test_timeline_tells_a_workflows_shared_state_changes(written: Written, run: Run) -> None:
    """Each superstep names the shared-state keys it changed, with their values."""
    workflow = written.threads.workflow
    story = _story(run, workflow.tenant, workflow.workflow)
    changed = {name: json.loads(value) for step in story["steps"]
               for name, value in step["changed"].items()}
    assert workflow.shared_state == changed


def test_timeline_keeps_tenants_apart(
    written: Written, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another tenant's thread of the same id is not part of this one's story."""
    trip = written.threads.interrupted
    out = _wide(run, "timeline", trip.tenant, trip.thread_id, monkeypatch=monkeypatch)
    assert (False, False) == (CRASH in out, "charge" in out)


# -- inspect -------------------------------------------------------------------------------


def test_inspect_pretty_prints_a_checkpoint_and_its_diff(written: Written, run: Run) -> None:
    """The checkpoint after ``approve``: its values, and what the step changed."""
    trip = written.threads.interrupted
    after_approve = trip.checkpoint_ids[3]
    ran = run("inspect", "--json", trip.tenant, trip.thread_id, "--checkpoint", after_approve)
    items = ["planned", f"approved: {ANSWER}"]
    assert ({"items": items}, ["approve"], [f'~ items: ["planned"] → {_compact(items)}']) == (
        ran.json()["values"], ran.json()["checkpoint"]["nodes"], ran.json()["diff"])


def test_inspect_shows_the_unfinished_step_of_the_last_checkpoint(
    written: Written, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --checkpoint, the thread's last checkpoint, here the crashed one."""
    crashed = written.threads.crashed
    out = _wide(run, "inspect", crashed.tenant, crashed.thread_id, monkeypatch=monkeypatch)
    assert (True, True, True) == (
        str(crashed.unfinished_checkpoint) in out, "UNFINISHED" in out, CRASH in out)


def test_inspect_refuses_an_unknown_checkpoint(written: Written, run: Run) -> None:
    """An id the thread never had is a usage error naming it."""
    trip = written.threads.interrupted
    ran = run("inspect", trip.tenant, trip.thread_id, "--checkpoint", "no-such-checkpoint")
    assert (2, True) == (ran.status, "no-such-checkpoint" in ran.err)


def test_inspect_shows_a_workflow_request_and_its_answer(
    written: Written, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow checkpoint where the request was pending, with its answer."""
    workflow = written.threads.workflow
    pending = workflow.checkpoint_ids[2]
    out = _wide(run, "inspect", workflow.tenant, workflow.workflow, "--checkpoint", pending,
                monkeypatch=monkeypatch)
    assert (True, True, True) == (
        workflow.request_id in out, f'"amount": {workflow.question.amount}' in out,
        f'→ "{workflow.answer}"' in out)


# -- log, stats, replay, export ------------------------------------------------------------


def test_log_session_finds_a_thread(written: Written, run: Run) -> None:
    """``log --session THREAD`` prints the thread's events, and only those."""
    trip = written.threads.interrupted
    events = asyncio.run(tenant_events(written.target, trip.tenant))
    expected = [e.position for e in events if e.stream_id == f"thread:{trip.thread_id}"]
    ran = run("log", "--json", "--tenant", trip.tenant, "--session", trip.thread_id)
    assert expected == [line["position"] for line in ran.json_lines()]


def test_stats_counts_threads_checkpoints_and_payload_bytes(written: Written, run: Run) -> None:
    """Threads, their live checkpoints and the bytes of their distinct live payloads."""
    tenant = written.threads.tenant
    threads, checkpoints, size = asyncio.run(_thread_facts(written.target, tenant))
    row = next(r for r in run("stats", "--json", "--tenant", tenant).json()["tenants"])
    assert (threads, checkpoints, size) == (
        row["threads"], row["thread_checkpoints"], row["thread_bytes"])


async def _thread_facts(target: BackendTarget, tenant: str) -> tuple[int, int, int]:
    """What the store (not the command) says the tenant's threads hold."""
    async with target.open() as log:
        found = await log.checkpoints.threads.page(tenant)
        # A list stored element by element: its manifest is a payload of its own.
        manifests = [row["digest"] for table in (THREAD_VALUES, THREAD_WRITES)
                     for row in await log.query(ViewQuery(table, {"tenant_id": tenant}))
                     if row["encoding"] == ELEMENTS_ENCODING]
        payloads = {digest: len(data) for digest, data in
                    (await log.get_blobs(tenant, manifests)).items()}
    for checkpoint in found:
        pieces = [checkpoint.state, *(checkpoint.channels or {}).values(),
                  *(w.value for w in checkpoint.writes or [])]
        for piece in pieces:
            for item in piece.items if isinstance(piece, Elements) else (piece,):
                if item is not None:
                    payloads[hashlib.sha256(item.data).digest()] = len(item.data)
    return len({c.thread_id for c in found}), len(found), sum(payloads.values())


def test_replay_shows_the_thread_views(written: Written, run: Run) -> None:
    """replay shows a thread's checkpoints as they stood (here: after its last event)."""
    trip = written.threads.interrupted
    last = asyncio.run(tenant_events(written.target, trip.tenant))[-1].position
    ran = run("replay", "--json", "--as-of", str(last), "--tenant", trip.tenant,
              "--session", trip.thread_id)
    rows = ran.json()["views"]["thread_checkpoints"]
    assert sorted(trip.checkpoint_ids) == sorted(row["checkpoint_id"] for row in rows)


def test_replay_help_lists_every_thread_view(written: Written, run: Run) -> None:
    """--help names each thread_* view --table can show."""
    from projections.views import metadata

    ran = run("replay", "--help", url=False)
    text = " ".join(ran.out.split())
    assert [] == [name for name in metadata.tables
                  if name.startswith("thread_") and name not in text]


def test_export_session_carries_a_thread_that_verifies(
    written: Written, run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A thread exported with --session imports into a new log that verifies and tells
    the same question and answer."""
    trip = written.threads.interrupted
    exported = tmp_path / "trip.jsonl"
    assert EXIT_OK == run("export", "--tenant", trip.tenant, "--session", trip.thread_id,
                          str(exported)).status
    copy = make_runner(capsys, BackendTarget("sqlite", f"sqlite:///{tmp_path / 'copy.db'}"))
    assert EXIT_OK == copy("import", str(exported)).status
    story = _story(copy, trip.tenant, trip.thread_id)
    assert (EXIT_OK, [(trip.question, trip.answer)]) == (
        copy("verify").status, [(q["value"], q["answer"]) for q in story["questions"]])


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# -- marks: deletes, prunes, copies (each test writes its own log) ---------------------------


def test_an_agent_framework_delete_is_told_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deleted workflow checkpoint reads as Agent Framework's delete, never as runs."""
    from eventlog.adapters.maf import EventlogCheckpointStorage
    from tests.forensic_threads import maf_workflow

    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def scenario() -> str:
        async with target.open() as log:
            workflow = await maf_workflow(log, "acme", "payments")
            gone = workflow.checkpoint_ids[1]
            assert await EventlogCheckpointStorage(log, tenant_id="acme").delete(gone)
            return gone

    gone = asyncio.run(scenario())
    out = _wide(make_runner(capsys, target), "timeline", "acme", "payments",
                monkeypatch=monkeypatch)
    assert (True, False) == (f"Agent Framework deleted checkpoint {gone}" in out,
                             f"runs {gone} deleted" in out)


def test_copy_prune_and_delete_thread_are_their_own_marks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """copy_thread, prune and delete_thread appear under LangGraph's own names."""
    from eventlog.adapters.langgraph import AsyncEventlogSaver
    from tests.forensic_threads import interrupted_thread

    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def scenario() -> None:
        async with open_log(target.url) as log:
            await interrupted_thread(log, "acme", "trip")
            saver = AsyncEventlogSaver(log, tenant_id="acme")
            await saver.acopy_thread("trip", "copy")
            await saver.aprune(["copy"])
            await saver.adelete_thread("copy")

    asyncio.run(scenario())
    story = _story(make_runner(capsys, target), "acme", "copy")
    assert ["copy_thread", "prune", "delete_thread"] == [m["kind"] for m in story["marks"]]


def test_inspect_says_a_checkpoint_was_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint pruned away is still told, as removed by the prune's event."""
    from eventlog.adapters.langgraph import AsyncEventlogSaver
    from tests.forensic_threads import interrupted_thread

    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def scenario() -> tuple[str, int]:
        async with open_log(target.url) as log:
            trip = await interrupted_thread(log, "acme", "trip")
            await AsyncEventlogSaver(log, tenant_id="acme").aprune(["trip"])
            events = [event async for event in log.read_stream("acme", "thread:trip")]
            return trip.checkpoint_ids[1], events[-1].position

    pruned, prune_position = asyncio.run(scenario())
    ran = make_runner(capsys, target)("inspect", "--json", "acme", "trip", "--checkpoint",
                                      pruned)
    assert prune_position == ran.json()["checkpoint"]["removed"]


def test_timeline_scan_tells_each_thread_event_once(written: Written, run: Run) -> None:
    """--scan reads the tenant's log for batches and lists the thread's stream once."""
    trip = written.threads.interrupted
    events = asyncio.run(tenant_events(written.target, trip.tenant))
    expected = [e.position for e in events if e.stream_id == f"thread:{trip.thread_id}"]
    ran = run("timeline", "--json", "--scan", trip.tenant, trip.thread_id)
    assert expected == [entry["position"] for entry in ran.json()["entries"]]


def test_delete_for_runs_is_its_own_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """delete_for_runs names the run and the checkpoints it removed."""
    from langgraph.types import Command

    from eventlog.adapters.langgraph import AsyncEventlogSaver
    from tests.forensic_threads import _three_nodes

    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")
    run_id = str(uuid.uuid4())

    async def scenario() -> list[str]:
        async with open_log(target.url) as log:
            saver = AsyncEventlogSaver(log, tenant_id="acme")
            config: Any = {"configurable": {"thread_id": "trip", "run_id": run_id}}
            await _three_nodes(saver).ainvoke({"items": []}, config)
            await _three_nodes(saver).ainvoke(Command(resume=ANSWER), config)
            ids = [c.checkpoint_id for c in await log.checkpoints.threads.page("acme", "trip")]
            await saver.adelete_for_runs([run_id])
            return ids

    removed = asyncio.run(scenario())
    story = _story(make_runner(capsys, target), "acme", "trip")
    marks = [(m["kind"], run_id in m["text"], all(i in m["text"] for i in removed))
             for m in story["marks"]]
    assert [("delete_for_runs", True, True)] == marks
