"""A framework thread for people and scripts: its headline, its questions and answers,
its tree of checkpoints (forks and subgraph namespaces), and one checkpoint's values with
what its step changed (``inspect``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from eventlog.checkpoints.thread_decisions import MAX_THREAD_ID_LENGTH, thread_stream
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.render import pairs_table, plural, when
from eventlog.cli.thread_story import (
    Step,
    ThreadStory,
    build_thread_story,
    diff,
    pretty,
    read_payloads,
    short,
)
from eventlog.cli.thread_story.values import plain
from eventlog.log import EventLog
from projections.query import ViewQuery
from projections.views import STREAM_HEADS


def thread_headline(tenant: str, story: ThreadStory) -> Text:
    """``Thread trip of tenant acme (LangGraph): 5 checkpoints, 3 steps, …``."""
    latest = story.latest
    forks = sum(1 for s in latest.values() if s.fork_of is not None)
    unfinished = sum(1 for s in latest.values() if s.unfinished is not None)
    answered = sum(1 for q in story.questions if q.answered)
    asked = "interrupt" if story.frameworks != ["Agent Framework"] else "request for a human"
    asked_many = "interrupts" if asked == "interrupt" else "requests for a human"
    subgraphs = len([ns for ns in story.namespaces if ns])
    nested = f"{plural(subgraphs, 'subgraph namespace')}, " if subgraphs else ""
    adoptions = sum(1 for mark in story.marks if mark.kind == "adopted")
    adopted = f", {plural(adoptions, 'adoption')}" if adoptions else ""
    return Text.assemble(
        ("Thread ", "bold"), (story.thread_id, "bold cyan"), (" of tenant ", "bold"),
        (tenant, "bold cyan"), f" ({' and '.join(story.frameworks) or 'no checkpoints'}): "
        f"{plural(len(latest), 'checkpoint')}, {nested}"
        f"{plural(len(story.questions), asked, asked_many)} ({answered} answered), "
        f"{plural(forks, 'fork')}, {plural(unfinished, 'unfinished step')}, "
        f"{plural(len(story.marks) - adoptions, 'deletion or copy', 'deletions or copies')}"
        f"{adopted}",
    )


def print_thread_details(console: Console, story: ThreadStory) -> None:
    """The questions with their answers, unfinished steps, and the checkpoint tree."""
    for question in story.questions:
        where = f" in {question.namespace}" if question.namespace else ""
        by = f" by {question.answered_by}" if question.answered_by else ""
        answer = (f"answered{by} {short(question.answer)} (#{question.answer_position})"
                  if question.answered else "NOT ANSWERED")
        console.print(Text(f"question #{question.position}: {question.node}{where} asked "
                           f"{short(question.value)}: {answer}", style="magenta"))
    for step in story.steps:
        if step.unfinished is not None:
            console.print(Text(f"unfinished after {step.checkpoint_id}: {step.unfinished}",
                               style="bold red"))
    console.print(checkpoint_tree(story))


def checkpoint_tree(story: ThreadStory) -> Tree:
    """The checkpoints as a tree of parent links, one branch per namespace."""
    root = Tree(Text(f"checkpoints of {story.thread_id}", style="bold"))
    latest = {(s.namespace, s.checkpoint_id): s for s in story.steps}
    lanes: dict[str, Tree] = {}
    for namespace in sorted(story.namespaces, key=lambda ns: ns.count("|")):
        outer = lanes.get(namespace.rsplit("|", 1)[0] if "|" in namespace else "", root)
        if namespace == "":
            outer = root
        lane = lanes[namespace] = outer.add(Text(
            story.lane(namespace) + ("" if namespace == "" else " (subgraph)"), style="bold"))
        steps = [s for (ns, _), s in latest.items() if ns == namespace]
        ids = {s.checkpoint_id for s in steps}
        children: dict[str | None, list[Step]] = {}
        for step in steps:
            parent = step.parent_id if step.parent_id in ids else None
            children.setdefault(parent, []).append(step)
        _grow(lane, None, children)
    return root


def _grow(node: Tree, parent: str | None, children: dict[str | None, list[Step]]) -> None:
    """Add the line of history from ``parent``: its first child continues at this level,
    every later child (a fork) opens a branch of its own under the fork point."""
    while True:
        kids = children.get(parent, [])
        if not kids:
            return
        first, *forks = kids
        for fork in forks:
            branch = node.add(Text(f"branch {fork.branch}, forked from {parent}",
                                   style="bold cyan"))
            branch.add(_label(fork))
            _grow(branch, fork.checkpoint_id, children)
        node.add(_label(first))
        parent = first.checkpoint_id


def _label(step: Step) -> Text:
    label = Text(f"{step.checkpoint_id} step {step.step} {step.source or ''}"
                 + (f" ran {', '.join(step.nodes)}" if step.nodes else ""))
    if step.fork_of is not None:
        label.append("  FORK", style="bold cyan")
    if step.unfinished is not None:
        label.append("  UNFINISHED", style="bold red")
    if step.removed is not None:
        label.append(f"  removed #{step.removed}", style="dim")
    return label


def thread_json(story: ThreadStory) -> dict[str, Any]:
    """A thread's story for scripts (values as JSON-like data)."""
    return {
        "thread_id": story.thread_id, "frameworks": story.frameworks,
        "namespaces": story.namespaces,
        "steps": [_step_json(step) for step in story.steps],
        "questions": [{
            "position": q.position, "namespace": q.namespace,
            "checkpoint_id": q.checkpoint_id, "node": q.node, "id": q.ask_id,
            "value": plain(q.value), "answered": q.answered, "answer": plain(q.answer),
            "answer_position": q.answer_position, "answered_by": q.answered_by,
        } for q in story.questions],
        "marks": [{"position": m.position, "kind": m.kind, "text": m.text}
                  for m in story.marks],
    }


def _step_json(step: Step) -> dict[str, Any]:
    return {
        "position": step.position, "framework": step.framework,
        "namespace": step.namespace, "checkpoint_id": step.checkpoint_id,
        "parent_id": step.parent_id, "step": step.step, "source": step.source,
        "nodes": step.nodes, "next": step.next, "branch": step.branch,
        "fork_of": step.fork_of, "unfinished": step.unfinished, "removed": step.removed,
        "changed": {c.name: short(c.value, c.size) for c in step.changed},
        "messages": step.messages, "requests": step.requests,
        "tasks": [{"node": t.node, "task_id": t.task_id, "path": t.path, "error": t.error,
                   "writes": {w.name: short(w.value, w.size) for w in t.writes}}
                  for t in step.tasks],
    }


def checkpoint_view(story: ThreadStory, step: Step) -> tuple[str, list[str]]:
    """A checkpoint's values pretty-printed, and what changed since its parent."""
    parent = story.step(step.namespace, step.parent_id) if step.parent_id else None
    values = step.values or {}
    return pretty(values), diff(parent.values or {} if parent else {}, values)


# -- inspect -------------------------------------------------------------------------------


async def thread_exists(log: EventLog, tenant: str, thread_id: str) -> bool:
    """Whether the tenant has a thread of this id (any event on its stream)."""
    if len(thread_id) > MAX_THREAD_ID_LENGTH:
        return False
    rows = await log.query(ViewQuery(
        STREAM_HEADS, {"tenant_id": tenant, "stream_id": thread_stream(thread_id)},
        limit=1, columns=("version",)))
    return bool(rows)


async def inspect_thread(context: Context, log: EventLog) -> int:
    """One checkpoint of a thread: what its step did, its values, its diff."""
    args = context.args
    thread_id: str = args.batch
    if not await thread_exists(log, args.tenant, thread_id):
        raise CommandError(f"unknown thread {thread_id!r} in tenant {args.tenant!r}: it "
                           "has no checkpoints or writes")
    events = [event async for event in log.read_stream(args.tenant, thread_stream(thread_id))]
    story, _ = build_thread_story(thread_id, events, await read_payloads(
        log, args.tenant, events))
    step = _chosen(story, args.checkpoint, args.namespace)
    values, changes = checkpoint_view(story, step)
    if context.json:
        context.print_json({"tenant": args.tenant, "thread_id": thread_id,
                            "checkpoint": _step_json(step), "values": plain(step.values),
                            "diff": changes})
        return EXIT_OK
    _print_checkpoint(context.out, story, step, values, changes)
    return EXIT_OK


def _chosen(story: ThreadStory, checkpoint_id: str | None, namespace: str | None) -> Step:
    latest = {(s.namespace, s.checkpoint_id): s for s in story.steps}
    found = [s for s in latest.values()
             if (checkpoint_id is None or s.checkpoint_id == checkpoint_id)
             and (namespace is None or s.namespace == namespace)]
    if not found:
        where = "" if namespace is None else f" in namespace {namespace!r}"
        known = "" if checkpoint_id is None else f" {checkpoint_id!r}"
        raise CommandError(f"thread {story.thread_id!r} has no checkpoint{known}{where} "
                           "(deleted checkpoints keep their events: see `eventlog timeline`)")
    return max(found, key=lambda s: s.position)


def _print_checkpoint(console: Console, story: ThreadStory, step: Step, values: str,
                      changes: list[str]) -> None:
    console.print(pairs_table(f"Checkpoint {step.checkpoint_id} of thread {story.thread_id}", [
        ("framework", step.framework), ("namespace", step.namespace or "(root)"),
        ("step", step.step), ("source", step.source), ("parent", step.parent_id),
        ("ran", ", ".join(step.nodes) or None), ("next", ", ".join(step.next) or None),
        ("fork of", step.fork_of), ("branch", step.branch),
        ("unfinished", step.unfinished), ("position", step.position),
        ("recorded", when(step.recorded_at)),
    ]))
    if step.unfinished is not None:
        console.print(Text(f"UNFINISHED: {step.unfinished}", style="bold red"))
    if step.removed is not None:
        console.print(Text(f"REMOVED by event #{step.removed}: the events stay, its "
                           "payloads were purged unless a live checkpoint shares them",
                           style="bold yellow"))
    console.print(Text("Values", style="bold"))
    console.print(values, markup=False, highlight=False)
    parent = f"parent {step.parent_id}" if step.parent_id else "nothing (no parent)"
    console.print(Text(f"Changed since {parent}", style="bold"))
    for line in changes or ["(nothing)"]:
        console.print(line, markup=False, highlight=False)
    for task in step.tasks:
        writes = ", ".join(f"{w.name} = {short(w.value, w.size)}" for w in task.writes)
        failed = f" RAISED {task.error}" if task.error else ""
        console.print(Text(f"pending writes of {task.node} (task {task.task_id}): "
                           f"{writes}{failed}"))
    for question in story.questions:
        if question.checkpoint_id == step.checkpoint_id:
            answer = short(question.answer) if question.answered else "not answered"
            console.print(Text(f"question from {question.node}: {short(question.value)} → "
                               f"{answer}", style="magenta"))
    for message in step.messages:
        console.print(Text(f"message {message}"))
    for request in step.requests:
        console.print(Text(f"request pending {request}", style="magenta"))
