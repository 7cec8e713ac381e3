"""What a framework thread's story is made of: steps, pending tasks, questions, marks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

LANGGRAPH = "LangGraph"
AGENT_FRAMEWORK = "Agent Framework"


@dataclass
class Change:
    """A channel (LangGraph) or shared-state key (Agent Framework) a step wrote."""

    name: str
    value: Any
    size: int | None = None
    """The payload's size in bytes, when it was stored on its own."""


@dataclass
class Task:
    """A task's pending writes on a checkpoint (LangGraph), in the order they came."""

    position: int
    task_id: str
    node: str
    path: str
    writes: list[Change] = field(default_factory=list)
    error: str | None = None
    """What the task raised (its ``__error__`` write)."""


@dataclass
class Question:
    """An interrupt (LangGraph) or a request for a human (Agent Framework) and its answer."""

    position: int
    namespace: str
    checkpoint_id: str
    """The checkpoint it was raised on (LangGraph) or first pending in (Agent Framework)."""
    node: str
    """The node (LangGraph) or executor (Agent Framework) that asked."""
    value: Any
    ask_id: str = ""
    """The interrupt id, or the request id."""
    answered: bool = False
    answer: Any = None
    answer_position: int | None = None
    answered_by: str | None = None
    """The principal the answer's event records as appending it (who answered: the
    approver, when the application names one), or None."""


@dataclass
class Step:
    """One put of a checkpoint, in the framework's words."""

    position: int
    recorded_at: datetime
    framework: str
    namespace: str
    checkpoint_id: str
    parent_id: str | None
    step: int | None
    source: str | None
    """LangGraph's ``input``, ``loop``, ``update`` or ``fork``; ``superstep`` (Agent
    Framework), or None when the metadata does not say."""
    nodes: list[str] = field(default_factory=list)
    """The nodes (executors) whose work this checkpoint records."""
    next: list[str] = field(default_factory=list)
    """LangGraph: the nodes this checkpoint triggers (its ``branch:to:X`` channels)."""
    changed: list[Change] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    """Agent Framework: the messages waiting for the next superstep, as ``a → b: value``."""
    requests: list[str] = field(default_factory=list)
    """Agent Framework: the requests for a human pending in this checkpoint."""
    tasks: list[Task] = field(default_factory=list)
    """LangGraph: the pending writes attached to this checkpoint, by task."""
    branch: int = 0
    """0 for the first line of history in the namespace; a fork starts a new number."""
    fork_of: str | None = None
    """The checkpoint this one branches from, when its parent already had a child."""
    put_again: int | None = None
    """The position of an earlier put of the same id (the views keep the last)."""
    unfinished: str | None = None
    """Why the step after this checkpoint never finished (failed, crashed), if so."""
    values: dict[str, Any] | None = None
    """The checkpoint's channel values (or Agent Framework state), when decoded."""
    removed: int | None = None
    """The position of the deletion, prune or delete of runs that removed it, if one did
    (its events stay; its payloads were purged unless another checkpoint shares them)."""


@dataclass
class Mark:
    """A deletion, prune, copy or delete of runs, in the framework's words."""

    position: int
    recorded_at: datetime
    kind: str
    text: str


@dataclass
class ThreadStory:
    """A framework thread told in its own words, in log order."""

    thread_id: str
    frameworks: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    """The namespaces in the order their first checkpoint came (``""`` is the root)."""
    latest: dict[tuple[str, str], Step] = field(default_factory=dict)
    """The last put of each checkpoint, by (namespace, checkpoint id)."""

    def lane(self, namespace: str) -> str:
        """The lane a namespace is drawn in: ``graph`` (``workflow`` for an Agent
        Framework thread) for the root, else the subgraph's namespace."""
        if namespace:
            return namespace
        return "workflow" if self.frameworks == [AGENT_FRAMEWORK] else "graph"

    def step(self, namespace: str, checkpoint_id: str) -> Step | None:
        """The last put of a checkpoint."""
        return self.latest.get((namespace, checkpoint_id))
