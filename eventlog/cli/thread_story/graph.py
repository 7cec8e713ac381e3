"""LangGraph's checkpoints and pending writes, read as steps, tasks and interrupts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventlog.checkpoints.elements import ELEMENTS_ENCODING, decode_manifest, resolve_items
from eventlog.cli.sealed import unread_reason
from eventlog.cli.thread_story.model import LANGGRAPH, Change, Question, Step, Task
from eventlog.cli.thread_story.values import Undecoded, decode, decode_elements
from eventlog.events.threads import ThreadCheckpointPut, ThreadWritesPut
from eventlog.records import RecordedEvent

NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""The task id LangGraph gives writes that belong to no task (a ``Command(resume=…)``)."""
INTERRUPT, RESUME, ERROR = "__interrupt__", "__resume__", "__error__"
_SKIPPED = ("__input__", INTERRUPT)


def node_of(task_path: str) -> str:
    """The node a task ran: ``plan`` for ``~__pregel_pull, plan``."""
    parts = [part.strip() for part in task_path.split(",")]
    if len(parts) >= 2 and parts[0] == "~__pregel_pull":
        return parts[1]
    return task_path or "(no task)"


def is_control(channel: str) -> bool:
    """LangGraph's own routing channels (``branch:to:X``), not the graph's state."""
    return channel.startswith("branch:")


class GraphReader:
    """Folds one thread's LangGraph events into steps, tasks and questions."""

    def __init__(self, payloads: Mapping[bytes, bytes]) -> None:
        self.payloads = payloads
        self.values: dict[tuple[str, str, str], Any] = {}
        self.states: dict[tuple[str, str], dict[str, Any]] = {}

    def payload(self, encoding: str, digest: str) -> tuple[Any, int | None]:
        """A stored payload decoded, and its size (None when it is not here: purged)."""
        data = self.payloads.get(bytes.fromhex(digest))
        if data is None:
            return Undecoded(0, unread_reason(self.payloads, bytes.fromhex(digest),
                                              "purged or not read")), None
        if encoding == ELEMENTS_ENCODING:  # a list stored element by element
            return self._elements(data)
        return decode(encoding, data), len(data)

    def _elements(self, data: bytes) -> tuple[Any, int | None]:
        """The list a manifest names: one budget for the whole list, whatever its shape
        (a manifest naming one element N times costs one value's budget, not N), each
        distinct element decoded once."""
        manifest = decode_manifest(data)
        items = None if manifest is None else resolve_items(manifest, self.payloads)
        if items is None or any(digest not in self.payloads for _, digest in items):
            return Undecoded(len(data), "an element or manifest is purged"), None
        return (decode_elements(items, self.payloads),
                sum(len(self.payloads[digest]) for _, digest in items))

    def step(self, event: RecordedEvent, put: ThreadCheckpointPut) -> Step:
        """The step a checkpoint put records."""
        state, _ = self.payload(put.state_encoding, put.state_digest)
        state = state if isinstance(state, dict) else {}
        self.states[(put.namespace, put.checkpoint_id)] = state
        changed = []
        for ref in put.channels:
            value, size = self.payload(ref.encoding, ref.digest)
            self.values[(put.namespace, ref.name, ref.channel_version)] = value
            if not is_control(ref.name):
                changed.append(Change(ref.name, value, size))
        source = put.metadata.get("source")
        found = Step(
            position=event.position, recorded_at=event.recorded_at, framework=LANGGRAPH,
            namespace=put.namespace, checkpoint_id=put.checkpoint_id,
            parent_id=put.parent_id, step=put.step,
            source=source if isinstance(source, str) else None, changed=changed,
            values={name: self.values[(put.namespace, name, version)]
                    for name, version in put.versions.items()
                    if not is_control(name) and (put.namespace, name, version) in self.values},
        )
        found.nodes = self._nodes(put, state)
        return found

    def _nodes(self, put: ThreadCheckpointPut, state: Mapping[str, Any]) -> list[str]:
        """The nodes that ran in the step this checkpoint closes: those whose
        ``versions_seen`` moved since the parent checkpoint."""
        before = self.states.get((put.namespace, put.parent_id or ""), {})
        seen_before = before.get("versions_seen") or {}
        seen = state.get("versions_seen") or {}
        if not isinstance(seen, dict) or not isinstance(seen_before, dict):
            return []
        return [node for node, versions in seen.items()
                if node not in _SKIPPED and seen_before.get(node) != versions]

    def task(self, event: RecordedEvent, put: ThreadWritesPut) -> Task:
        """A task's pending writes."""
        task = Task(position=event.position, task_id=put.task_id,
                    node=node_of(put.task_path) if put.task_id != NULL_TASK else "(resume)",
                    path=put.task_path)
        for write in put.writes:
            value, size = self.payload(write.encoding, write.digest)
            if write.channel == ERROR:
                task.error = value if isinstance(value, str) else repr(value)
            task.writes.append(Change(write.channel, value, size))
        return task


def questions_of(task: Task, namespace: str, checkpoint_id: str) -> list[Question]:
    """The interrupts a task raised (its ``__interrupt__`` write)."""
    found = []
    for write in task.writes:
        if write.name != INTERRUPT:
            continue
        for item in write.value if isinstance(write.value, list | tuple) else [write.value]:
            found.append(Question(
                position=task.position, namespace=namespace, checkpoint_id=checkpoint_id,
                node=task.node, value=getattr(item, "value", item),
                ask_id=str(getattr(item, "id", "")),
            ))
    return found


def answer_of(task: Task, question: Question) -> tuple[bool, Any]:
    """Whether a task's ``__resume__`` write answers the question, and the answer."""
    for write in task.writes:
        if write.name != RESUME:
            continue
        value = write.value
        if isinstance(value, dict) and question.ask_id in value:
            return True, value[question.ask_id]
        if task.task_id == NULL_TASK:
            return True, value
        if task.task_id and task.node == question.node:
            return True, value[0] if isinstance(value, list) and len(value) == 1 else value
    return False, None


def next_nodes(put_channels: list[str]) -> list[str]:
    """The nodes a checkpoint triggers next (its ``branch:to:X`` channels)."""
    return [name.removeprefix("branch:to:") for name in put_channels
            if name.startswith("branch:to:")]
