"""A framework thread in the report, in its framework's words (from `thread_story`): the
kind and caption of each mark, questions linked to their answers, forks linked to their
branch point, unfinished steps, the tree of checkpoints, and each step's values with
what it changed. Pure functions of the stories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eventlog.cli.report.parts import CHAIN_EDGE, Link, Stop, TreeRow
from eventlog.cli.report.values import MAX_SHOWN, StateView, capped, cut_note
from eventlog.cli.thread_story import AGENT_FRAMEWORK, Step, ThreadStory, diff, pretty, short

MAX_TREE_ROWS = 300
"""Checkpoints of one thread listed in its tree; the rest are counted."""

_KINDS = {
    "checkpoint": "checkpoint", "checkpoint (put again)": "duplicate",
    "checkpoint (saved again)": "duplicate", "interrupt": "question", "resume": "answer",
    "pending writes": "writes", "task failed": "failed", "copy_thread": "other",
    "adopted": "other",
}


def thread_kind(what: str) -> str:
    """The mark kind of a thread event's timeline line (deletions are tombstones)."""
    return _KINDS.get(what, "tombstone")


def branch_lanes(stories: Sequence[ThreadStory]) -> dict[int, str]:
    """By position: the lane of each event on a fork's branch (``graph · branch 1``): the
    fork's checkpoint, the checkpoints after it and the pending writes on them."""
    lanes: dict[int, str] = {}
    for story in stories:
        for step in story.steps:
            if step.branch:
                lane = f"{story.lane(step.namespace)} · branch {step.branch}"
                lanes[step.position] = lane
                lanes.update((task.position, lane) for task in step.tasks)
    return lanes


def story_kinds(stories: Sequence[ThreadStory]) -> dict[int, str]:
    """By position: the events the story gives a kind of their own: where a question was
    asked (an interrupt, or the checkpoint holding a new request for a human), where it
    was answered, and each fork."""
    kinds: dict[int, str] = {}
    for story in stories:
        kinds.update((s.position, "fork") for s in story.steps if s.fork_of is not None)
        for question in story.questions:
            kinds[question.position] = "question"
            if question.answer_position is not None:
                kinds[question.answer_position] = "answer"
    return kinds


def done_by(stories: Sequence[ThreadStory]) -> dict[int, str]:
    """By position: what did the work, each value saying what it is: the nodes
    (``node plan``, ``nodes plan, approve``) or executors (``executor ask``) a step ran,
    ``update_state as node plan`` for an update, the node of the task that wrote pending
    writes, the node that asked a question."""
    found: dict[int, str] = {}
    for story in stories:
        for step in story.steps:
            kind = "executor" if step.framework == AGENT_FRAMEWORK else "node"
            who = _named(kind, step.nodes)
            found[step.position] = ("update_state" + (f" as {who}" if who else "")
                                    if step.source == "update" else who)
            for task in step.tasks:
                found[task.position] = _named("node", [task.node])
        for question in story.questions:
            asker = "executor" if AGENT_FRAMEWORK in story.frameworks else "node"
            found[question.position] = _named(asker, [question.node])
    return found


def _named(kind: str, names: Sequence[str]) -> str:
    """``node plan``, ``nodes plan, ship``; empty for none."""
    if not names:
        return ""
    return f"{kind}{'s' if len(names) > 1 else ''} {', '.join(names)}"


def captions(stories: Sequence[ThreadStory]) -> dict[int, str]:
    """By position: the nodes a step ran (or its source), who asked, each answer, and
    each deletion, prune or copy by its framework's name (``delete_thread``, …)."""
    found: dict[int, str] = {}
    for story in stories:
        for step in story.steps:
            if step.fork_of is not None:
                found[step.position] = f"fork: {', '.join(step.nodes) or step.source or ''}"
            else:
                found[step.position] = ", ".join(step.nodes) or step.source or ""
        for question in story.questions:
            found[question.position] = f"{question.node} asks"
            if question.answer_position is not None:
                found[question.answer_position] = f"answer {short(question.answer)}"
        found.update((mark.position, mark.kind) for mark in story.marks)
    return {position: _fit(text) for position, text in found.items() if text}


_CAPTION = 40
"""Characters a caption keeps; a longer one ends in an ellipsis (the mark's tooltip and
the event's row hold it whole)."""


def _fit(text: str) -> str:
    return text if len(text) <= _CAPTION else text[:_CAPTION - 1] + "…"


def thread_links(stories: Sequence[ThreadStory], index_of: Mapping[int, int]) -> list[Link]:
    """Each answered question to its answer; each fork's branch point to the fork."""
    links: list[Link] = []
    for story in stories:
        for question in story.questions:
            if question.answer_position in index_of and question.position in index_of:
                links.append(Link(index_of[question.position],
                                  index_of[question.answer_position or 0], "answers"))
        latest = latest_steps(story)
        for step in story.steps:
            parent = latest.get((step.namespace, step.fork_of or ""))
            if step.fork_of is not None and parent is not None and parent.position in index_of:
                links.append(Link(index_of[parent.position], index_of[step.position], "fork"))
    return links


def unfinished_stops(
    stories: Sequence[ThreadStory], index_of: Mapping[int, int], lanes: Sequence[str]
) -> list[Stop]:
    """A stop after the last event of each step that started and never finished."""
    stops: list[Stop] = []
    for story in stories:
        for step in story.steps:
            if step.unfinished is None:
                continue
            last = max([step.position, *(task.position for task in step.tasks)])
            if last in index_of:
                index = index_of[last]
                stops.append(Stop(index, lanes[index], f"UNFINISHED after checkpoint "
                                                       f"{step.checkpoint_id}: {step.unfinished}"))
    return stops


def thread_tree(story: ThreadStory) -> list[TreeRow]:
    """The thread's checkpoints as a tree per namespace (the root's first), depth first:
    a fork is a second child of its branch point; straight stretches longer than
    ``2 * CHAIN_EDGE + 1`` are folded into one line."""
    rows: list[TreeRow] = []
    for namespace in story.namespaces:
        steps = [s for s in story.steps if s.namespace == namespace and s.put_again is None]
        ids = {s.checkpoint_id for s in steps}
        children: dict[str | None, list[Step]] = {}
        for step in steps:
            children.setdefault(step.parent_id if step.parent_id in ids else None,
                                []).append(step)
        stack = [(root, 1 if namespace else 0) for root in reversed(children.get(None, []))]
        while stack:  # iterative: a straight line of 10,000 must not recurse
            step, depth = stack.pop()
            chain = [step]
            while len(children.get(chain[-1].checkpoint_id, [])) == 1:
                chain.append(children[chain[-1].checkpoint_id][0])
            shown = _chain_rows(story, chain, depth)
            rows.extend(shown)
            stack.extend((child, shown[-1].depth + 1) for child in reversed(
                children.get(chain[-1].checkpoint_id, [])))
    if len(rows) > MAX_TREE_ROWS:
        left = len(rows) - MAX_TREE_ROWS
        rows = [*rows[:MAX_TREE_ROWS], TreeRow(0, rows[MAX_TREE_ROWS].position, "", None,
                                               story.lane(""), folded=left)]
    return rows


def _chain_rows(story: ThreadStory, chain: list[Step], depth: int) -> list[TreeRow]:
    if len(chain) <= 2 * CHAIN_EDGE + 1:
        return [_tree_row(story, step, depth + i) for i, step in enumerate(chain)]
    hidden = chain[CHAIN_EDGE:-CHAIN_EDGE]
    fold = TreeRow(depth + CHAIN_EDGE, hidden[0].position, "", hidden[0].step,
                   story.lane(hidden[0].namespace), folded=len(hidden))
    after = depth + CHAIN_EDGE + 1
    return [*(_tree_row(story, step, depth + i) for i, step in enumerate(chain[:CHAIN_EDGE])),
            fold, *(_tree_row(story, step, after + i)
                    for i, step in enumerate(chain[-CHAIN_EDGE:]))]


def _tree_row(story: ThreadStory, step: Step, depth: int) -> TreeRow:
    what = [step.source or ""]
    if step.nodes:
        what.append("ran " + ", ".join(step.nodes))
    if step.unfinished is not None:
        what.append("UNFINISHED: " + step.unfinished)
    return TreeRow(depth, step.position, step.checkpoint_id, step.step,
                   story.lane(step.namespace), note=" · ".join(w for w in what if w),
                   fork=step.fork_of)


def step_views(stories: Sequence[ThreadStory], positions: set[int],
               sizes: Mapping[int, int]) -> dict[int, StateView]:
    """By position: a listed step's values, pretty, and what changed since its parent."""
    views: dict[int, StateView] = {}
    for story in stories:
        latest = latest_steps(story)
        for step in story.steps:
            if step.position in positions and step.values is not None:
                parent = latest.get((step.namespace, step.parent_id or ""))
                views[step.position] = _step_view(step, parent, sizes.get(step.position, 0))
    return views


def latest_steps(story: ThreadStory) -> dict[tuple[str, str], Step]:
    """The last put of each checkpoint, by (namespace, checkpoint id)."""
    return {(step.namespace, step.checkpoint_id): step for step in story.steps}


def _step_view(step: Step, parent: Step | None, size: int) -> StateView:
    values = step.values or {}
    text = pretty(values)
    note = cut_note(text)
    encoding = "Agent Framework" if step.framework != "LangGraph" else "LangGraph"
    if parent is None or parent.values is None:
        return StateView(size, encoding, text[:MAX_SHOWN], note)
    lines = diff(parent.values, values)
    return StateView(size, encoding, text[:MAX_SHOWN], note, parent.checkpoint_id,
                     capped(lines))
