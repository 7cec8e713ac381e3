"""``eventlog report`` on the threads the adapters write: a real compiled LangGraph graph
(an interrupt and its resume) through `AsyncEventlogSaver`, a real Agent Framework
workflow (a request for a human and its answer) through `EventlogCheckpointStorage`."""

from __future__ import annotations

import asyncio
import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from agent_framework import (
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    register_checkpoint_type,
    response_handler,
)
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.cli import EXIT_OK
from tests.cli.helpers import Run, make_runner
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres

TENANT = "acme"
GRAPH_THREAD = "trip-42"
WORKFLOW = "payments"


class State(TypedDict):
    items: Annotated[list[str], operator.add]


def _plan(state: State) -> dict[str, Any]:
    return {"items": ["planned"]}


def _approve(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "ship it?"})
    return {"items": [f"approved:{answer}"]}


def _finish(state: State) -> dict[str, Any]:
    return {"items": ["done"]}


def _graph(saver: AsyncEventlogSaver) -> Any:
    builder = StateGraph(State)
    for name, node in (("plan", _plan), ("approve", _approve), ("finish", _finish)):
        builder.add_node(name, node)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


@dataclass
class Approval:
    """What the workflow asks a human."""

    amount: int


register_checkpoint_type(Approval)


class _Plan(Executor):
    @handler
    async def start(self, order: str, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(len(order) * 10)


class _Ask(Executor):
    @handler
    async def ask(self, amount: int, ctx: WorkflowContext) -> None:
        await ctx.request_info(Approval(amount), str)

    @response_handler
    async def answered(
        self, original: Approval, answer: str, ctx: WorkflowContext[None, str]
    ) -> None:
        await ctx.yield_output(f"{original.amount}: {answer}")


def _workflow(storage: EventlogCheckpointStorage) -> Workflow:
    plan, ask = _Plan(id="plan"), _Ask(id="ask")
    return WorkflowBuilder(name=WORKFLOW, start_executor=plan,
                           checkpoint_storage=storage).add_edge(plan, ask).build()


async def write_graph_thread(target: BackendTarget) -> None:
    """The graph runs to its interrupt, then resumes with ``yes``."""
    config: Any = {"configurable": {"thread_id": GRAPH_THREAD}}
    async with AsyncEventlogSaver.from_conn_string(
        target.url, tenant_id=TENANT, **target.options()
    ) as saver:
        graph = _graph(saver)
        await graph.ainvoke({"items": []}, config)
        await graph.ainvoke(Command(resume="yes"), config)


async def write_workflow(target: BackendTarget) -> None:
    """The workflow asks for approval, pauses, and is answered ``yes`` from its checkpoint."""
    async with EventlogCheckpointStorage.from_url(
        target.url, tenant_id=TENANT, **target.options()
    ) as storage:
        paused = await _workflow(storage).run("order")
        request = paused.get_request_info_events()[0]
        latest = await storage.get_latest(workflow_name=WORKFLOW)
        assert latest is not None
        await _workflow(storage).run(checkpoint_id=latest.checkpoint_id,
                                     responses={request.request_id: "yes"})


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def adapters_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """A log holding one LangGraph thread and one Agent Framework workflow of ``acme``."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("report") / "log.db"
        target = BackendTarget("sqlite", f"sqlite:///{path}")
    else:
        require_postgres()
        target = BackendTarget("postgresql", PG_URL, f"t_report_{id(request)}")
    asyncio.run(write_graph_thread(target))
    asyncio.run(write_workflow(target))
    yield target
    if request.param == "postgresql":
        asyncio.run(drop_schema(target.schema))


@pytest.fixture
def run_adapters(capsys: pytest.CaptureFixture[str], adapters_target: BackendTarget) -> Run:
    """``eventlog ARGS`` against the adapters' log."""
    return make_runner(capsys, adapters_target)


def _lanes(html: str) -> list[str]:
    return re.findall(r'data-lane="([^"]+)"', html)


def test_a_langgraph_thread_report_is_written(run_adapters: Run, tmp_path: Path) -> None:
    """An interrupted and resumed graph's thread: exit 0, its checkpoints on a lane."""
    out = tmp_path / "graph.html"
    ran = run_adapters("report", TENANT, GRAPH_THREAD, "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    html = out.read_text()
    assert ["thread"] == _lanes(html)
    assert 0 < html.count('class="mark k-checkpoint')


def test_a_workflow_report_is_written(run_adapters: Run, tmp_path: Path) -> None:
    """An Agent Framework workflow that asked and was answered: exit 0, a lane drawn."""
    out = tmp_path / "workflow.html"
    ran = run_adapters("report", TENANT, WORKFLOW, "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    html = out.read_text()
    assert 0 < len(_lanes(html))
    assert 0 < html.count('class="mark k-checkpoint')


def _index(html: str) -> dict[str, list[str]]:
    """The index's lines: name -> the texts of its cells."""
    rows = re.findall(r'<tr class="subject" data-subject="([^"]+)">(.*?)</tr>', html)
    return {name: [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                          row)]
            for name, row in rows}


def test_a_tenant_report_lists_its_threads_with_their_framework(
    run_adapters: Run, tmp_path: Path
) -> None:
    """TENANT alone: a line per thread, saying which framework wrote it."""
    out = tmp_path / "tenant.html"
    ran = run_adapters("report", TENANT, "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    index = _index(out.read_text())
    assert {GRAPH_THREAD: "LangGraph thread", WORKFLOW: "Agent Framework workflow"} == {
        name: cells[2] for name, cells in index.items()}


def test_a_tenant_report_counts_each_threads_checkpoints_and_interrupts(
    run_adapters: Run, adapters_target: BackendTarget, tmp_path: Path
) -> None:
    """The graph thread's line counts its puts (as the log holds them) and its interrupt."""
    out = tmp_path / "tenant.html"
    run_adapters("report", TENANT, "-o", str(out))
    puts = asyncio.run(_count_puts(adapters_target, GRAPH_THREAD))
    cells = _index(out.read_text())[GRAPH_THREAD]
    assert [str(puts), "1"] == [cells[4], cells[6]]


async def _count_puts(target: BackendTarget, thread_id: str) -> int:
    async with target.open() as log:
        return len([e async for e in log.read_stream(TENANT, f"thread:{thread_id}")
                    if e.type == "thread_checkpoint_put"])


def test_a_tenant_report_links_each_line_to_its_section(
    run_adapters: Run, tmp_path: Path
) -> None:
    """Every drawn thread's line links to the section that draws it."""
    out = tmp_path / "tenant.html"
    run_adapters("report", TENANT, "-o", str(out))
    html = out.read_text()
    links = re.findall(r'<a href="#(s-[^"]+)">its section below</a>', html)
    sections = re.findall(r'<section class="card session" id="(s-[^"]+)"', html)
    assert (2, sorted(sections)) == (len(links), sorted(links))


def test_a_thread_not_drawn_names_the_command_for_its_page(
    run_adapters: Run, tmp_path: Path
) -> None:
    """--max-sessions 1: the older thread's line says how to write its own page."""
    out = tmp_path / "tenant.html"
    run_adapters("report", TENANT, "--max-sessions", "1", "-o", str(out))
    assert f"eventlog report {TENANT} {GRAPH_THREAD}" == _index(out.read_text())[
        GRAPH_THREAD][-1]
