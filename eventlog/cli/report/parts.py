"""The pieces a session's report is drawn from: lanes, marks, stops, links, tree rows and
table rows (values only; `model` computes them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

CHAIN_EDGE = 4
"""A straight chain of checkpoints longer than twice this is folded in the tree."""


@dataclass(frozen=True, slots=True)
class Lane:
    """One swimlane: a run, an interrupt batch, or the session itself."""

    key: str
    """``run 2``, ``batch 1`` or ``session``: what the table's lane column says."""
    kind: str
    """``run``, ``batch`` or ``session``."""
    ident: str
    """The run id or batch id (empty for the session lane)."""


@dataclass(frozen=True, slots=True)
class Mark:
    """One event on its lane, at its place in the session's log order."""

    index: int
    position: int
    lane: str
    kind: str
    """``checkpoint``, ``duplicate``, ``writes``, ``created``, ``claim``, ``stale``, ``capture``,
    ``effect``, ``finish``, ``expired``, ``unresolved``, ``reconcile``, ``tombstone``,
    ``undecodable`` or ``other``."""
    label: str
    broken: bool = False
    at: float = 0.0
    """Seconds from the session's first event to this one, on the events' clock."""
    caption: str = ""
    """A few words drawn beside the mark: the nodes a step ran, a question, an answer."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Where a run stopped without finishing: after the mark at ``index`` on ``lane``."""

    index: int
    lane: str
    label: str


@dataclass(frozen=True, slots=True)
class Deadline:
    """A moment on a lane that no event records: a claim's lease running out."""

    lane: str
    at: float
    """Seconds from the session's first event, on the events' clock."""
    label: str


@dataclass(frozen=True, slots=True)
class Link:
    """An arrow between two marks on different lanes (or a replay on the same one)."""

    source: int
    target: int
    """Indexes of the two marks."""
    kind: str
    """``parent`` (a checkpoint after its parent on another lane), ``replay`` (a duplicate
    back to the record it repeats), ``resumes`` (a batch from its checkpoint), ``answers``
    (a framework thread's question to its answer) or ``fork`` (a branch point to the
    checkpoint that forked from it)."""


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One line of the checkpoint tree (or a folded stretch of a straight chain)."""

    depth: int
    position: int
    checkpoint_id: str
    step: int | None
    lane: str
    duplicate: str | None = None
    """Why the record is a duplicate (None: it is not)."""
    folded: int = 0
    """When more than zero: this line stands for that many checkpoints left out."""
    note: str = ""
    """A framework step's source and the nodes it ran."""
    fork: str | None = None
    """The checkpoint this one forked from (a second child of its parent)."""
    problem: str | None = None
    """What verify found wrong with this checkpoint's event (``hash_mismatch``, …)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One listed event: what the table shows, and the full event behind a click."""

    position: int
    recorded_at: datetime
    type: str
    lane: str
    principal: str
    """Who the application recorded as appending the event (empty: nobody named)."""
    done_by: str
    """What the event names as doing it, saying what it is: ``node plan``, ``executor
    ask``, ``claim generation 2``, ``reconciler ops`` (empty: nothing)."""
    hash_prefix: str
    what: str
    details: str
    duplicate: bool
    broken: bool
    full: dict[str, Any]
