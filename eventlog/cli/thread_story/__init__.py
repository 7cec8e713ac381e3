"""A framework thread told in the framework's own words (pure, but for `read_payloads`).

`build_thread_story` folds a thread's recorded events (log order) and the bytes of their
payloads into a `ThreadStory`: LangGraph steps (number, source, nodes that ran, channels
changed, the nodes triggered next), pending writes by task, interrupts matched with the
``Command(resume=…)`` that answered them, forks as branches of a checkpoint tree,
subgraph namespaces as lanes, steps that started and never finished; Agent Framework
supersteps (executors, messages, requests for a human and their answers, state changes);
and deletions, prunes, copies and deleted runs as marks. `describe` gives each event's
timeline line. The framework of each checkpoint is known from its payload label: Agent
Framework's ``maf-checkpoint+json``, else LangGraph's serializer types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from eventlog.cli.render import plural
from eventlog.cli.sealed import Payloads, Unsealer
from eventlog.cli.thread_story.graph import (
    GraphReader,
    answer_of,
    next_nodes,
    questions_of,
)
from eventlog.cli.thread_story.model import (
    AGENT_FRAMEWORK,
    LANGGRAPH,
    Change,
    Mark,
    Question,
    Step,
    Task,
    ThreadStory,
)
from eventlog.cli.thread_story.values import MAF_ENCODING, diff, pretty, short
from eventlog.cli.thread_story.workflow import WorkflowReader
from eventlog.events.threads import (
    ThreadAdopted,
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadCopied,
    ThreadDeleted,
    ThreadEvent,
    ThreadWritesPut,
)
from eventlog.log import EventLog
from eventlog.records import RecordedEvent

__all__ = [
    "AGENT_FRAMEWORK", "LANGGRAPH", "Change", "Line", "Mark", "Question", "Step", "Task",
    "ThreadStory", "build_thread_story", "diff", "pretty", "read_payloads", "short",
]

_CHUNK = 500
EARLY_WRITES = ("listed before {checkpoint} itself: LangGraph saves a task's writes as the "
                "task finishes, and may save their checkpoint after them")
"""Said of pending writes the log holds before the put of the checkpoint they belong to."""

@dataclass(frozen=True)
class Line:
    """One event's timeline line: its lane, what happened, and the details."""

    lane: str
    what: str
    details: str

async def read_payloads(
    log: EventLog, tenant_id: str, events: Iterable[RecordedEvent]
) -> dict[bytes, bytes]:
    """The stored bytes of every payload the thread events reference (purged ones are
    absent; sealed ones that do not open are absent and say why: `Payloads.unread`), read
    in chunks of 500 digests."""
    wanted = list(dict.fromkeys(
        digest for event in events if isinstance(event.event, ThreadEvent)
        for digest in _digests(event.event)))
    found = Payloads({})
    unsealer = Unsealer(log)
    for start in range(0, len(wanted), _CHUNK):
        chunk = await unsealer.blobs(tenant_id, wanted[start:start + _CHUNK])
        found.update(chunk)
        found.unread.update(chunk.unread)
    return found

def _digests(event: ThreadEvent) -> tuple[bytes, ...]:
    if isinstance(event, ThreadCheckpointPut | ThreadWritesPut):
        return event.blob_digests()
    return ()

class _Builder:
    def __init__(self, thread_id: str, payloads: Mapping[bytes, bytes]) -> None:
        self.story = ThreadStory(thread_id)
        self.graph = GraphReader(payloads)
        self.workflow = WorkflowReader(payloads)
        self.lines: dict[int, Line] = {}
        self.children: dict[tuple[str, str], str] = {}
        self.branches: dict[str, int] = {}
        self.puts: dict[tuple[str, str], int] = {}
        self.tasks: dict[tuple[str, str], list[Task]] = {}

    def add(self, event: RecordedEvent) -> None:
        payload = event.event
        if isinstance(payload, ThreadCheckpointPut):
            self._put(event, payload)
        elif isinstance(payload, ThreadWritesPut):
            self._writes(event, payload)
        elif isinstance(payload, ThreadDeleted | ThreadCheckpointsRemoved | ThreadCopied
                        | ThreadAdopted):
            self._mark(event, payload)

    def _put(self, event: RecordedEvent, put: ThreadCheckpointPut) -> None:
        if put.state_encoding == MAF_ENCODING:
            step = self.workflow.step(event, put, self.story.questions)
        else:
            step = self.graph.step(event, put)
            step.next = next_nodes([ref.name for ref in put.channels])
        if step.framework not in self.story.frameworks:
            self.story.frameworks.append(step.framework)
        if put.namespace not in self.story.namespaces:
            self.story.namespaces.append(put.namespace)
        key = (put.namespace, put.checkpoint_id)
        step.put_again = self.puts.get(key)
        self.puts[key] = event.position
        self._place(step)
        self.story.steps.append(step)
        self.story.latest[key] = step
        self.lines[event.position] = _step_line(self.story, step)

    def _place(self, step: Step) -> None:
        """Branches: a checkpoint whose parent already has another child starts one."""
        namespace, parent = step.namespace, step.parent_id
        branch = self.branches.get(f"{namespace}\0{parent}", 0) if parent else 0
        if parent is not None and step.put_again is None:
            first = self.children.setdefault((namespace, parent), step.checkpoint_id)
            if first != step.checkpoint_id:
                step.fork_of = parent
                branch = 1 + max(self.branches.values(), default=0)
        step.branch = branch
        self.branches[f"{namespace}\0{step.checkpoint_id}"] = branch

    def _writes(self, event: RecordedEvent, put: ThreadWritesPut) -> None:
        # LangGraph may append a step's writes before the put of their checkpoint.
        task = self.graph.task(event, put)
        self.tasks.setdefault((put.namespace, put.checkpoint_id), []).append(task)
        asked = [self._ask(q) for q in questions_of(task, put.namespace, put.checkpoint_id)]
        answered = self._answer(task, put.checkpoint_id, event.actor)
        line = _task_line(self.story.lane(put.namespace), put.checkpoint_id, task, asked,
                          answered)
        if (put.namespace, put.checkpoint_id) not in self.puts:
            line = Line(line.lane, line.what, line.details + "; " + EARLY_WRITES.format(
                checkpoint=put.checkpoint_id))
        self.lines[event.position] = line

    def _ask(self, question: Question) -> Question:
        for earlier in self.story.questions:
            if earlier.ask_id and earlier.ask_id == question.ask_id:
                if len(question.namespace) > len(earlier.namespace):  # the deeper asker
                    earlier.namespace, earlier.node = question.namespace, question.node
                    earlier.checkpoint_id = question.checkpoint_id
                return earlier
        self.story.questions.append(question)
        return question

    def _answer(self, task: Task, checkpoint_id: str, by: str | None) -> list[Question]:
        answered = []
        for question in self.story.questions:
            if question.answered or question.checkpoint_id != checkpoint_id:
                continue
            found, answer = answer_of(task, question)
            if found:
                question.answered, question.answer = True, answer
                question.answer_position, question.answered_by = task.position, by
                answered.append(question)
        return answered

    def _mark(self, event: RecordedEvent, payload: ThreadEvent) -> None:
        if isinstance(payload, ThreadDeleted):
            gone = [s for s in self.story.latest.values() if s.removed is None]
        elif isinstance(payload, ThreadCheckpointsRemoved):
            gone = [s for k in payload.removed
                    if (s := self.story.step(k.namespace, k.checkpoint_id)) is not None]
        else:
            gone = []
        for step in gone:
            step.removed = event.position
        mark = _mark(self.story, event, payload)
        self.story.marks.append(mark)
        self.lines[event.position] = Line(self.story.lane(""), mark.kind, mark.text)

    def finish(self) -> None:
        """Attach pending writes to their checkpoints; mark the checkpoints whose next
        step started and never finished."""
        latest = self.story.latest
        for key, step in latest.items():
            step.tasks = self.tasks.get(key, [])
        parents = {(s.namespace, s.parent_id) for s in latest.values() if s.parent_id}
        for key, step in latest.items():
            if step.tasks and key not in parents:
                step.unfinished = _why_unfinished(self.story, step)

def _why_unfinished(story: ThreadStory, step: Step) -> str | None:
    failed = [task for task in step.tasks if task.error is not None]
    wrote = [task.node for task in step.tasks if task.error is None
             and any(not w.name.startswith("__") for w in task.writes)]
    waiting = [q for q in story.questions if q.checkpoint_id == step.checkpoint_id
               and not q.answered]
    if waiting and not failed:
        return None  # paused for an answer, not broken
    after = f"step {step.step + 1}" if step.step is not None else "the next step"
    if failed:
        text = f"{after} failed: " + "; ".join(f"{t.node} raised {t.error}" for t in failed)
    else:
        text = f"{after} started and never finished"
    if wrote:
        text += f" ({', '.join(wrote)} wrote, and the writes stay pending)"
    return text

def build_thread_story(
    thread_id: str, events: Iterable[RecordedEvent], payloads: Mapping[bytes, bytes]
) -> tuple[ThreadStory, dict[int, Line]]:
    """The thread's story and each thread event's timeline line, by position."""
    builder = _Builder(thread_id, payloads)
    for event in events:
        builder.add(event)
    builder.finish()
    for step in builder.story.steps:
        if step.unfinished is not None:
            line = builder.lines[step.position]
            builder.lines[step.position] = Line(
                line.lane, line.what, f"{line.details}; UNFINISHED: {step.unfinished}")
    return builder.story, builder.lines

def _step_line(story: ThreadStory, step: Step) -> Line:
    lane = story.lane(step.namespace)
    if step.framework == AGENT_FRAMEWORK:
        parts = [f"superstep {step.step}"]
        if step.nodes:
            parts.append(f"executors ran: {', '.join(step.nodes)}")
        parts += [f"message {m}" for m in step.messages]
        parts += [f"request pending {r}" for r in step.requests]
        parts += [f"state {c.name} = {short(c.value)}" for c in step.changed]
        what = "checkpoint (saved again)" if step.put_again is not None else "checkpoint"
        return Line(lane, what, f"{step.checkpoint_id}: " + "; ".join(parts))
    parts = [f"step {step.step} ({step.source or 'source unknown'})"]
    if step.nodes:
        parts.append(f"ran {', '.join(step.nodes)}")
    if step.fork_of is not None:
        parts.append(f"FORK from {step.fork_of} (branch {step.branch})")
    elif step.parent_id is not None:
        parts.append(f"after {step.parent_id}")
    if step.source == "update":
        parts.append("written by update_state")
    parts += [f"{c.name} = {short(c.value, c.size)}" for c in step.changed]
    if step.next:
        parts.append(f"next: {', '.join(step.next)}")
    what = "checkpoint (put again)" if step.put_again is not None else "checkpoint"
    return Line(lane, what, f"{step.checkpoint_id}: " + "; ".join(parts))

def _task_line(lane: str, checkpoint_id: str, task: Task, asked: list[Question],
               answered: list[Question]) -> Line:
    if asked:
        return Line(lane, "interrupt", "; ".join(
            f"{q.node} asks {short(q.value)} (interrupt {q.ask_id}"
            + (f", raised in {q.namespace} and passed up by {task.node})"
               if q.node != task.node else ")") for q in asked))
    if answered:
        return Line(lane, "resume", "; ".join(
            f"answer {short(q.answer)} to {q.node}'s question {short(q.value)}"
            for q in answered) + _other_writes(task))
    if task.node == "(resume)":
        return Line(lane, "resume", "Command(resume=" + ", ".join(
            short(w.value, w.size) for w in task.writes) + f") given on {checkpoint_id}")
    if task.error is not None:
        return Line(lane, "task failed", f"{task.node} raised {task.error} "
                                         f"(on {checkpoint_id})")
    writes = ", ".join(f"{w.name} = {short(w.value, w.size)}" for w in task.writes
                       if not w.name.startswith("branch:"))
    return Line(lane, "pending writes", f"{task.node} wrote {writes or 'nothing'} "
                                        f"(on {checkpoint_id})")

def _other_writes(task: Task) -> str:
    rest = [f"{w.name} = {short(w.value, w.size)}" for w in task.writes
            if not w.name.startswith(("__", "branch:"))]
    return f"; {task.node} wrote {', '.join(rest)}" if rest else ""

def _mark(story: ThreadStory, event: RecordedEvent, payload: ThreadEvent) -> Mark:
    maf = story.frameworks == [AGENT_FRAMEWORK]
    if isinstance(payload, ThreadAdopted):
        times = sorted(item.ts for item in payload.checkpoints if item.ts)
        since = f", first recorded there {times[0]} to {times[-1]}" if times else ""
        return Mark(event.position, event.recorded_at, "adopted",
                    f"adopted from {payload.framework} {payload.source}: "
                    f"{plural(len(payload.checkpoints), 'checkpoint')} and "
                    f"{plural(payload.writes, 'pending write')} that follow as puts{since}")
    if isinstance(payload, ThreadCopied):
        return Mark(event.position, event.recorded_at, "copy_thread",
                    f"copy_thread from {payload.source_thread_id}: "
                    f"{plural(payload.checkpoints, 'checkpoint')} and "
                    f"{plural(payload.writes, 'write')} that follow as puts")
    if isinstance(payload, ThreadDeleted):
        kind = "workflow deleted" if maf else "delete_thread"
        return Mark(event.position, event.recorded_at, kind,
                    f"{kind}: {plural(payload.checkpoints, 'checkpoint')} and "
                    f"{plural(payload.writes, 'pending write')} removed in every namespace; "
                    "their unshared payloads were purged (the events stay)")
    assert isinstance(payload, ThreadCheckpointsRemoved)
    ids = [key.checkpoint_id for key in payload.removed]
    if payload.reason == "prune":
        return Mark(event.position, event.recorded_at, "prune",
                    f"prune: pruned to the latest {payload.keep} per namespace, "
                    f"{plural(len(ids), 'checkpoint')} removed with their writes: {', '.join(ids)}")
    if payload.reason == "retention":
        return Mark(event.position, event.recorded_at, "retention",
                    f"retention: {plural(len(ids), 'checkpoint')} past the tenant's policy "
                    f"removed with their writes, their unshared payloads purged: "
                    f"{', '.join(ids)}")
    steps = [story.step(k.namespace, k.checkpoint_id) for k in payload.removed]
    if steps and all(s is not None and s.framework == AGENT_FRAMEWORK for s in steps):
        told = ", ".join(f"{s.checkpoint_id} (superstep {s.step})" for s in steps if s)
        return Mark(event.position, event.recorded_at, "checkpoint deleted",
                    f"Agent Framework deleted checkpoint {told}; its state was purged")
    return Mark(event.position, event.recorded_at, "delete_for_runs",
                f"delete_for_runs({', '.join(payload.run_keys)}) removed "
                f"{plural(len(ids), 'checkpoint')} and their writes: {', '.join(ids)}")
