"""``eventlog report`` on the threads the adapters write (tests/forensic_threads.py): real
compiled LangGraph graphs through `AsyncEventlogSaver` (an interrupt and its resume, a fork
through ``update_state``, a subgraph, a crashed superstep) and a real Agent Framework
workflow (a request for a human and its answer) through `EventlogCheckpointStorage`;
what the page says is checked against what the graph or workflow did."""

from __future__ import annotations

import asyncio
import html as html_lib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.cli.report.index import index_lines, tally
from eventlog.records import RecordedEvent
from tests.cli.helpers import Run, make_runner
from tests.cli.test_verify import _blob, execute
from tests.conftest import BackendTarget
from tests.forensic_threads import (
    ANSWER,
    CRASH,
    QUESTION,
    Forensics,
    Written,
    interrupted_thread,
    maf_workflow,
    written_on,
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Written]:
    """The threads on each backend, for reading only."""
    yield from written_on(request.param, tmp_path_factory)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], written: Written) -> Run:
    """``eventlog ARGS`` against the threads' log."""
    return make_runner(capsys, written.target)


@pytest.fixture
def threads(written: Written) -> Forensics:
    """What the graphs and the workflow did."""
    return written.threads


def report(run: Run, tmp_path: Path, *args: str) -> str:
    """``eventlog report ARGS`` written to a file: the page (exit 0 required)."""
    out = tmp_path / "r.html"
    ran = run("report", *args, "-o", str(out))
    assert EXIT_OK == ran.status, ran.err
    return out.read_text()


def test_a_langgraph_thread_report_is_written(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """An interrupted and resumed graph's thread (it crashed with IndexError): exit 0, its
    checkpoints on the graph's lane."""
    html = report(run, tmp_path, threads.tenant, "trip")
    assert (["graph"], True) == (_lanes(html), 'class="mark k-checkpoint' in html)


def test_a_workflow_report_is_written(run: Run, threads: Forensics, tmp_path: Path) -> None:
    """An Agent Framework workflow that asked and was answered: exit 0, one lane."""
    html = report(run, tmp_path, threads.tenant, "payments")
    assert (["workflow"], True) == (_lanes(html), 'class="mark k-checkpoint' in html)


def _lanes(html: str) -> list[str]:
    return re.findall(r'<g class="lane [^"]*" data-lane="([^"]+)"', html)


def _index(html: str) -> dict[str, list[str]]:
    """The index's lines: name -> the texts of its cells."""
    rows = re.findall(r'<tr class="subject[^"]*" data-subject="([^"]+)">(.*?)</tr>', html)
    return {name: [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                          row)]
            for name, row in rows}


def test_a_tenant_report_lists_its_threads_with_their_framework(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """TENANT alone: a line per thread, saying which framework wrote it."""
    index = _index(report(run, tmp_path, threads.tenant))
    graphs = {name: "LangGraph thread" for name in ("trip", "forked", "nested", "crashed")}
    assert {**graphs, "payments": "Agent Framework workflow"} == {
        name: cells[2] for name, cells in index.items()}


def test_a_tenant_report_counts_each_threads_checkpoints_and_interrupts(
    run: Run, threads: Forensics, written: Written, tmp_path: Path
) -> None:
    """Each line counts its puts (as the log holds them) and its questions once: the
    interrupt, the subgraph's interrupt (written again as it bubbles up), the request."""
    index = _index(report(run, tmp_path, threads.tenant))
    puts = [asyncio.run(_count_puts(written.target, threads.tenant, name))
            for name in ("trip", "nested", "payments")]
    assert [[str(n), "1"] for n in puts] == [
        [index[name][4], index[name][6]] for name in ("trip", "nested", "payments")]


def test_a_workflow_not_drawn_says_its_requests_are_unknown(
    threads: Forensics, written: Written
) -> None:
    """Its requests for a human are inside its payloads: — rather than a wrong 0."""
    events = asyncio.run(_events(written.target, threads.tenant, "payments"))
    [line] = index_lines({(threads.tenant, "payments"): tally(events)}, {})
    assert (None, False) == (line.interrupts, line.shown)


async def _events(target: BackendTarget, tenant: str, thread_id: str) -> list[RecordedEvent]:
    async with target.open() as log:
        return [e async for e in log.read_stream(tenant, f"thread:{thread_id}")]


async def _count_puts(target: BackendTarget, tenant: str, thread_id: str) -> int:
    async with target.open() as log:
        return len([e async for e in log.read_stream(tenant, f"thread:{thread_id}")
                    if e.type == "thread_checkpoint_put"])


def test_a_tenant_report_links_each_line_to_its_section(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """Every drawn thread's line links to the section that draws it."""
    html = report(run, tmp_path, threads.tenant)
    links = re.findall(r'<a href="#(s-[^"]+)">its section below</a>', html)
    sections = re.findall(r'<section class="card session" id="(s-[^"]+)"', html)
    assert (5, sorted(sections)) == (len(links), sorted(links))


def test_a_thread_not_drawn_names_the_command_for_its_page(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """--max-sessions 1: an older thread's line says how to write its own page."""
    index = _index(report(run, tmp_path, threads.tenant, "--max-sessions", "1"))
    assert f"eventlog report {threads.tenant} trip" == index["trip"][-1]


def _captions(html: str) -> list[str]:
    return [html_lib.unescape(c) for c in re.findall(r'<text class="caption"[^>]*>([^<]+)<',
                                                     html)]


def test_the_steps_carry_the_names_of_the_nodes_that_ran(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """Every node the graph ran is named on a step of its lane, in the order it ran."""
    named = [c for c in _captions(report(run, tmp_path, threads.tenant, "trip"))
             if c in threads.interrupted.nodes]
    assert threads.interrupted.nodes == list(dict.fromkeys(named))


def _qa(html: str) -> list[tuple[str, str]]:
    rows = re.findall(r'<tr class="question">.*?</tr>', html, re.S)
    return [tuple(html_lib.unescape(p) for p in re.findall(r"<pre>(.*?)</pre>", row, re.S))
            for row in rows]  # type: ignore[misc]


def test_the_question_is_shown_with_its_answer(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The interrupt's value and the Command(resume=...) that answered it, side by side."""
    [(question, answer)] = _qa(report(run, tmp_path, threads.tenant, "trip"))
    assert (QUESTION["question"] in question, f'"{ANSWER}"') == (True, answer)


def test_the_question_links_to_its_answer_on_the_lane(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """An arrow goes from the question's mark to the answer's."""
    html = report(run, tmp_path, threads.tenant, "trip")
    asked = re.findall(r'class="mark k-question" data-pos="(\d+)"', html)
    answered = re.findall(r'class="mark k-answer" data-pos="(\d+)"', html)
    links = re.findall(r'class="link link-answers" d="[^"]+" data-from="(\d+)" '
                       r'data-to="(\d+)"', html)
    assert list(zip(asked, answered, strict=True)) == links


def test_a_workflow_request_is_shown_with_its_answer(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The workflow's request for a human (its data) and the human's answer."""
    [(question, answer)] = _qa(report(run, tmp_path, threads.tenant, "payments"))
    assert (str(threads.workflow.question.amount) in question, f'"{ANSWER}"') == (
        True, answer)


def test_the_fork_is_a_branch_of_the_checkpoint_tree(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """update_state's checkpoint is tagged a fork, one level under its branch point."""
    html = report(run, tmp_path, threads.tenant, "forked")
    depths = {cid: int(depth) for depth, cid in re.findall(
        r'<li class="node[^"]*" style="--d:(\d+)"[^>]*><code>([^<]+)</code>', html)}
    forks = re.findall(r'<li class="node[^"]*"[^>]*><code>([^<]+)</code>(?:(?!</li>).)*?'
                       r'class="tag fork" title="a second child of ([^"]+)"', html)
    fork = threads.forked
    assert ([(fork.fork_id, fork.fork_from)], depths[fork.fork_from] + 1) == (
        forks, depths[str(fork.fork_id)])


def test_the_fork_is_drawn_from_its_branch_point(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """On the lanes an arrow goes from the branch point's mark to the fork's."""
    html = report(run, tmp_path, threads.tenant, "forked")
    ids = dict(re.findall(r'<li class="node[^"]*"[^>]*data-pos="(\d+)"><code>([^<]+)</code>',
                          html))
    links = re.findall(r'class="link link-fork" d="[^"]+" data-from="(\d+)" '
                       r'data-to="(\d+)"', html)
    assert [(threads.forked.fork_from, threads.forked.fork_id)] == [
        (ids[a], ids[b]) for a, b in links]


def test_the_fork_runs_on_a_lane_of_its_own(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The fork's checkpoint and what followed it are on the branch's lane, under the
    graph's."""
    html = report(run, tmp_path, threads.tenant, "forked")
    on_branch = re.findall(r'<tr class="ev[^"]*" id="ev-(\d+)"[^>]*>(?:(?!</tr>).)*?'
                           r'<td class=time title="graph · branch 1">', html, re.S)
    fork = re.search(rf'<li class="node[^"]*"[^>]*data-pos="(\d+)"><code>{threads.forked.fork_id}',
                     html)
    assert fork is not None
    assert (["graph", "graph · branch 1"], fork[1]) == (_lanes(html), on_branch[0])


def test_a_subgraph_has_a_lane_of_its_own(run: Run, threads: Forensics, tmp_path: Path) -> None:
    """The subgraph's checkpoints are on a lane under the graph's, one per namespace."""
    html = report(run, tmp_path, threads.tenant, "nested")
    assert ["graph", *threads.subgraph.namespaces] == _lanes(html)


def test_the_unfinished_step_is_marked_with_why(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The crashed superstep: a stop after its checkpoint naming the node that raised."""
    html = report(run, tmp_path, threads.tenant, "crashed")
    stops = [html_lib.unescape(t) for t in re.findall(
        r'<g class="stop" data-run="[^"]*"><title>([^<]+)</title>', html)]
    crashed = threads.crashed
    assert [(True, True)] == [(f"after checkpoint {crashed.unfinished_checkpoint}" in stop,
                               f"{crashed.failed} raised" in stop and CRASH in stop)
                              for stop in stops]


def test_another_tenants_thread_of_the_same_name_never_shows(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The stranger's ``trip`` crashed; ours did not: no stop, no failure on our page."""
    html = report(run, tmp_path, threads.tenant, "trip")
    assert ([], False) == (re.findall(r'<g class="stop"', html), CRASH in html)


def test_a_steps_values_are_shown_with_what_it_changed(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The last checkpoint of the thread: its ``items`` pretty, and the change from its
    parent naming ``items``."""
    html = report(run, tmp_path, threads.tenant, "trip")
    last = threads.interrupted.checkpoint_ids[-1]
    row = re.search(rf'<tr class="ev[^"]*"[^>]*>(?:(?!</tr>).)*?{last}(?:(?!</tr>).)*</tr>',
                    html, re.S)
    assert row is not None
    pre = [html_lib.unescape(p) for p in re.findall(r"<pre>(.*?)</pre>", row[0], re.S)]
    assert (True, True) == ('"shipped"' in pre[0], "items" in pre[1])


def test_done_by_names_the_node_that_ran_each_step(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The events table's "done by" column names the graph's nodes as nodes, in the order
    they ran, and a workflow's executors as executors."""
    def done(name: str) -> list[str]:
        html = report(run, tmp_path, threads.tenant, name)
        return re.findall(r'<tr class="ev[^"]*"[^>]*>(?:<td[^>]*>.*?</td>){5}<td class=time>'
                          r"([^<]*)</td>", html)

    nodes = [f"node {node}" for node in threads.interrupted.nodes]
    assert nodes == [shown for shown in dict.fromkeys(done("trip")) if shown in nodes]
    assert {"executor ask"} <= set(done("payments"))


def test_the_fork_is_a_mark_of_its_own(run: Run, threads: Forensics, tmp_path: Path) -> None:
    """The checkpoint update_state wrote is drawn as a fork, on the branch's lane."""
    html = report(run, tmp_path, threads.tenant, "forked")
    ids = dict(re.findall(r'<li class="node[^"]*"[^>]*data-pos="(\d+)"><code>([^<]+)</code>',
                          html))
    forks = re.findall(r'class="mark k-fork" data-pos="(\d+)"', html)
    assert [threads.forked.fork_id] == [ids[position] for position in forks]


def test_as_of_the_question_it_is_not_answered_yet(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """--as-of the interrupt's position: the question is there, unanswered, no answer
    mark."""
    html = report(run, tmp_path, threads.tenant, "trip")
    asked = re.findall(r'class="mark k-question" data-pos="(\d+)"', html)[0]
    then = report(run, tmp_path, threads.tenant, "trip", "--as-of", asked)
    row = re.findall(r'<tr class="question">.*?</tr>', then, re.S)
    assert (1, True, 0) == (len(row), "not answered" in row[0],
                            then.count('class="mark k-answer"'))


def test_a_workflow_request_and_its_answer_are_marks(
    run: Run, threads: Forensics, tmp_path: Path
) -> None:
    """The checkpoint holding the new request is a question, the one holding the answer an
    answer, linked."""
    html = report(run, tmp_path, threads.tenant, "payments")
    asked = re.findall(r'class="mark k-question" data-pos="(\d+)"', html)
    answered = re.findall(r'class="mark k-answer" data-pos="(\d+)"', html)
    links = re.findall(r'class="link link-answers" d="[^"]+" data-from="(\d+)" '
                       r'data-to="(\d+)"', html)
    assert ([(asked[0], answered[0])], 1, 1) == (links, len(asked), len(answered))


def test_copy_prune_and_delete_thread_are_marks_named_as_langgraph_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copied thread pruned and deleted: three marks, captioned copy_thread, prune and
    delete_thread, after the copied checkpoints."""
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def scenario() -> None:
        async with target.open() as log:
            await interrupted_thread(log, "acme", "trip")
            saver = AsyncEventlogSaver(log, tenant_id="acme")
            await saver.acopy_thread("trip", "copy")
            await saver.aprune(["copy"])
            await saver.adelete_thread("copy")

    asyncio.run(scenario())
    html = report(make_runner(capsys, target), tmp_path, "acme", "copy")
    marks = re.findall(r'class="mark k-(other|tombstone)" data-pos="(\d+)"', html)
    captions = dict(re.findall(r'<text class="caption"[^>]*data-pos="(\d+)">([^<]+)<', html))
    assert [("other", "copy_thread"), ("tombstone", "prune"),
            ("tombstone", "delete_thread")] == [(kind, captions.get(position))
                                                for kind, position in marks]


def test_an_undecodable_thread_event_stays_in_its_threads_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The thread's first event no longer decodes: the tenant report still draws it on
    the thread's page, and exits 1 (verify found it)."""
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def scenario() -> None:
        async with target.open() as log:
            await interrupted_thread(log, "acme", "trip")

    asyncio.run(scenario())
    where = "WHERE tenant_id = $1 AND stream_id = $2 AND stream_version = 1"
    data = bytes(execute(target, f"SELECT data FROM events {where}", "acme", "thread:trip"))
    execute(target, f"UPDATE events SET data = {_blob(target, data[:-5])} {where}",
            "acme", "thread:trip")
    out = tmp_path / "r.html"
    ran = make_runner(capsys, target)("report", "acme", "-o", str(out))
    html = out.read_text()
    assert (EXIT_FINDINGS, ["trip"], 1) == (
        ran.status, list(_index(html)), html.count('class="mark k-undecodable'))


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_the_questions_table_says_who_answered(
        capsys: pytest.CaptureFixture[str], target: BackendTarget, tmp_path: Path) -> None:
    """Beside who asked (the node, the executor), who answered: the principal the answer's
    event records (the approver was only in the events table); — when none was named."""

    async def write() -> None:
        async with target.open() as log:
            await interrupted_thread(log, "acme", "trip", answered_by="alice@example.com")
            await interrupted_thread(log, "acme", "trip-2")
            await maf_workflow(log, "acme", "payments", answered_by="bob@example.com")

    asyncio.run(write())
    run = make_runner(capsys, target)
    rows = {name: re.findall(r'<tr class="question">.*?<td class=answerer>(.*?)</td>',
                             report(run, tmp_path, "acme", name), re.S)
            for name in ("trip", "trip-2", "payments")}
    assert {"trip": ["alice@example.com"], "trip-2": ["—"],
            "payments": ["bob@example.com"]} == rows
    shown = run("timeline", "acme", "trip", "--json").json()
    assert ["alice@example.com"] == [q["answered_by"] for thread in shown["threads"]
                                     for q in thread["questions"]]
