"""Single-writer threads, when asked: a fenced put or write is appended only if it is based
on the thread's current head in its namespace, and the check is atomic with the append.

LangGraph lets two processes write one thread, and the chain then forks silently
(langgraph#8796); a cancelled run's late put overwrites newer state (#8810); a late write
resurrects a deleted thread (#7206). A fenced call (``fenced=True`` on
`ThreadCheckpoints.put` / ``put_writes``; the LangGraph saver's ``fenced=``) refuses all
three with `NotThreadHead`, and appends nothing.

- **The head** of a namespace is its checkpoint with the highest id: the one LangGraph's
  ``get_tuple`` returns and a graph continues from.
- **A put** is accepted when its parent is the head and its id sorts after the head's (so
  the head it makes is the new checkpoint, and no checkpoint gets two children); when it
  is the head put again with the same parent (a retried put); or, in a namespace with no
  checkpoint, when it has no parent and no recent removal took an id at or above its own.
- **A write** (``put_writes``) is accepted when it names the head, or an id after the
  head (LangGraph's default ``durability="async"`` saves a step's writes while that
  step's checkpoint is still being put), unless a recent removal took that id or a later
  one: writes to an older checkpoint, or to a deleted one, are refused.
- **Recent removals** are the thread's last `LOOKBACK` events (`ThreadDeleted` records
  each namespace's head when it was deleted, `ThreadCheckpointsRemoved` the ids it
  removed); they are read only in a namespace without a head or for a write after it.
- **Atomic**: the decision reads the stream's version first, then the head, and appends
  fenced on that version (`VersionConflict` if anything was appended since: decide again,
  holding the stream after the first loss, as removals do: `eventlog.log.fencing`). What
  a successful fenced append leaves (version and heads) is remembered, so a single
  writer's next decision reads nothing; a remembered basis that proved stale is dropped,
  and a refusal is only ever decided from a fresh read.

**In log order** (``head_by="position"``: Agent Framework's saver, whose checkpoint ids are
random and whose "latest" is the last save in log order): the head is the namespace's
checkpoint saved last. A put is accepted when its parent is the head, when it is the head
put again with the same parent, or when it has no parent (a new run's first checkpoint,
which then becomes the head: a writer still continuing the older lineage is refused at its
next put). Recent removals are not read: a removed parent is simply not the head.

Decisions first (no I/O), then `ThreadFence`, the I/O around them.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from eventlog._logging import get_logger
from eventlog.checkpoints.removal import REMOVAL_RETRIES
from eventlog.checkpoints.thread_decisions import thread_stream
from eventlog.errors import NotThreadHead, VersionConflict
from eventlog.events import Event
from eventlog.events.threads import (
    ThreadCheckpointPut,
    ThreadCheckpointsRemoved,
    ThreadDeleted,
    ThreadWritesPut,
)
from eventlog.log import EventLog
from eventlog.log.fencing import decide_fenced, held_after_first
from eventlog.records import AppendResult
from projections.query import RowRequired, ViewQuery
from projections.threads import THREAD_CHECKPOINTS
from projections.views import STREAM_HEADS

logger = get_logger(__name__)

LOOKBACK = 64
"""How many of a thread's last events are searched for a removal a late write is checked
against (a removal further back has been followed by that many appends)."""
_KNOWN = 10_000

Head = tuple[str, str | None]
"""A namespace's head: its checkpoint id and that checkpoint's parent."""
Fenced = ThreadCheckpointPut | ThreadWritesPut


# -- decisions (no I/O) ----------------------------------------------------------------


def based_on(event: Fenced) -> str | None:
    """The checkpoint a fenced event is based on: a put's parent, a write's checkpoint."""
    return event.parent_id if isinstance(event, ThreadCheckpointPut) else event.checkpoint_id


HEAD_ORDERS = ("id", "position")
"""What makes a namespace's head: its highest checkpoint id (LangGraph's), or its last put
in log order (Agent Framework's)."""


def needs_removals(event: Fenced, head: Head | None) -> bool:
    """Whether deciding ``event`` needs the recent removals: a put without a parent in a
    namespace without a head, or a write to anything but the head or an older id."""
    if isinstance(event, ThreadCheckpointPut):
        return head is None and event.parent_id is None
    return head is None or event.checkpoint_id > head[0]


def removed_high_waters(events: Iterable[Event]) -> dict[str, str]:
    """The highest checkpoint id the removals among ``events`` took from each namespace."""
    taken: dict[str, str] = {}
    for event in events:
        if isinstance(event, ThreadDeleted):
            pairs = list(event.heads.items())
        elif isinstance(event, ThreadCheckpointsRemoved):
            pairs = [(key.namespace, key.checkpoint_id) for key in event.removed]
        else:
            continue
        for namespace, checkpoint_id in pairs:
            taken[namespace] = max(checkpoint_id, taken.get(namespace, checkpoint_id))
    return taken


def refusal(event: Fenced, head: Head | None, removed: str | None = None) -> str | None:
    """Why the fenced ``event`` is refused against the namespace's ``head`` and the
    highest id a recent removal took (``removed``); None when it is accepted."""
    if isinstance(event, ThreadCheckpointPut):
        return _put_refusal(event.checkpoint_id, event.parent_id, head, removed)
    checkpoint_id = event.checkpoint_id
    if head is not None and checkpoint_id == head[0]:
        return None
    if head is not None and checkpoint_id < head[0]:
        return "writes to a checkpoint older than the head: another writer moved on"
    if removed is not None and checkpoint_id <= removed:
        return "writes to a checkpoint that was removed (the thread was deleted or pruned)"
    return None


def log_order_refusal(event: ThreadCheckpointPut, head: Head | None) -> str | None:
    """Why the fenced put ``event`` is refused when the head is the last put in log order
    (``head_by="position"``); None when it is accepted."""
    parent_id = event.parent_id
    if head is None:
        return (None if parent_id is None else
                "the namespace holds no checkpoint: its parent was deleted or never put")
    if event.checkpoint_id == head[0]:
        return None if parent_id == head[1] else "the head put again with another parent"
    if parent_id is None or parent_id == head[0]:
        return None
    return ("its parent is not the last checkpoint saved: another writer moved the thread "
            "on, or the parent was deleted")


def _put_refusal(
    checkpoint_id: str, parent_id: str | None, head: Head | None, removed: str | None
) -> str | None:
    if head is None:
        if parent_id is not None:
            return "the namespace holds no checkpoint: its parent was deleted or never put"
        if removed is not None and checkpoint_id <= removed:
            return "a late first put: a removal since took a later checkpoint"
        return None
    if checkpoint_id == head[0]:
        return None if parent_id == head[1] else "the head put again with another parent"
    if parent_id is None:
        return "a put without a parent in a namespace that has a head"
    if parent_id != head[0]:
        return "its parent is not the head: another writer moved the thread on"
    if checkpoint_id < head[0]:
        return "its id sorts before the head's, so it would not become the head"
    return None


# -- I/O -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Basis:
    """A thread's stream version, the heads of namespaces known at that version and,
    once read, what its recent removals took (`removed_high_waters`)."""

    version: int
    heads: dict[str, Head | None] = field(default_factory=dict)
    removals: dict[str, str] | None = None


class ThreadFence:
    """The fenced appends of `ThreadCheckpoints` (its ``put`` and ``put_writes`` with
    ``fenced=True``): see the module docstring. ``lock(tenant_id, thread_id)`` is the
    store's lock on a thread's stream in this process, taken around each try."""

    def __init__(
        self, log: EventLog, lock: Callable[[str, str], asyncio.Lock]
    ) -> None:
        self._log = log
        self._lock = lock
        self._known: OrderedDict[tuple[str, str, bool], _Basis] = OrderedDict()

    async def append(
        self, tenant_id: str, event: Fenced, attach: Sequence[bytes],
        require: Sequence[RowRequired] = (), *, head_by: str = "id",
    ) -> AppendResult:
        """Append ``event`` to its thread if it is based on the head (`refusal`, or
        `log_order_refusal` for ``head_by="position"``), else raise `NotThreadHead`;
        decided again after a lost race, holding the stream."""
        thread_id = event.thread_id
        stream = thread_stream(thread_id)
        by_position = head_by == "position"

        async def once(attempt: int) -> AppendResult:
            async with (self._lock(tenant_id, thread_id),
                        held_after_first(self._log, tenant_id, stream, attempt)):
                key = (tenant_id, thread_id, by_position)
                known = self._known.get(key) if attempt == 0 else None
                if known is not None:
                    try:
                        return await self._decided(tenant_id, event, attach, known,
                                                   fresh=False, by_position=by_position,
                                                   require=require)
                    except VersionConflict:  # remembered, but another writer appended since
                        pass
                return await self._decided(tenant_id, event, attach,
                                           await self._read(tenant_id, stream), fresh=True,
                                           by_position=by_position, require=require)

        return await decide_fenced(once, REMOVAL_RETRIES, _retried(tenant_id, thread_id))

    async def _decided(
        self, tenant_id: str, event: Fenced, attach: Sequence[bytes], basis: _Basis, *,
        fresh: bool, by_position: bool, require: Sequence[RowRequired] = (),
    ) -> AppendResult:
        """Decide ``event`` on ``basis`` and append it fenced on its version. A refusal
        decided on a remembered basis is not trusted: it is dropped and this raises
        `VersionConflict`, so the caller decides again from a fresh read."""
        key = (tenant_id, event.thread_id, by_position)
        namespace = event.namespace
        head = (basis.heads[namespace] if namespace in basis.heads
                else await self._head(tenant_id, event.thread_id, namespace,
                                      "position" if by_position else "checkpoint_id"))
        removals = basis.removals
        if by_position:
            if not isinstance(event, ThreadCheckpointPut):
                raise TypeError("a fenced write has no head in log order: writes are "
                                "fenced by checkpoint id")
            reason = log_order_refusal(event, head)
        else:
            if removals is None and needs_removals(event, head):
                removals = await self._removals(tenant_id, event.thread_id, basis.version)
            reason = refusal(event, head, None if removals is None else removals.get(namespace))
        if reason is not None:
            if not fresh:
                self._known.pop(key, None)
                raise VersionConflict(thread_stream(event.thread_id), basis.version, -1)
            logger.info("fenced_write_refused", tenant=tenant_id, thread=event.thread_id,
                        namespace=namespace, based_on=based_on(event),
                        head=None if head is None else head[0], reason=reason)
            raise NotThreadHead(tenant_id, event.thread_id, namespace,
                                checkpoint_id=event.checkpoint_id, expected=based_on(event),
                                head=None if head is None else head[0], reason=reason)
        try:
            result = await self._log.append(
                tenant_id, thread_stream(event.thread_id), [event],
                expected_version=basis.version, attach=attach, require=require,
            )
        except VersionConflict:
            self._known.pop(key, None)
            raise
        if isinstance(event, ThreadCheckpointPut) and (by_position or head is None
                                                        or event.checkpoint_id > head[0]):
            head = (event.checkpoint_id, event.parent_id)
        # Our own put or write removes nothing: the removals read still hold.
        self._remember(key, _Basis(result.version, {**basis.heads, namespace: head},
                                   removals))
        return result

    async def _read(self, tenant_id: str, stream: str) -> _Basis:
        # The version as the views show it (they commit with the events): one view query,
        # where a fresh `stream_head` costs SQLite a trip through its writer.
        rows = await self._log.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": tenant_id, "stream_id": stream}, columns=("version",),
        ))
        return _Basis(int(rows[0]["version"]) if rows else 0)

    async def _head(self, tenant_id: str, thread_id: str, namespace: str,
                    order: str) -> Head | None:
        rows = await self._log.query(ViewQuery(
            THREAD_CHECKPOINTS,
            {"tenant_id": tenant_id, "thread_id": thread_id, "namespace": namespace},
            order_by=(order,), descending=True, limit=1,
            columns=("checkpoint_id", "parent_id"),
        ))
        return (rows[0]["checkpoint_id"], rows[0]["parent_id"]) if rows else None

    async def _removals(self, tenant_id: str, thread_id: str, version: int) -> dict[str, str]:
        if version == 0:
            return {}
        events = [recorded.event async for recorded in self._log.read_stream(
            tenant_id, thread_stream(thread_id), max(1, version - LOOKBACK + 1),
            limit=LOOKBACK,
        )]
        return removed_high_waters(events)

    def _remember(self, key: tuple[str, str, bool], basis: _Basis) -> None:
        self._known[key] = basis
        self._known.move_to_end(key)
        if len(self._known) > _KNOWN:
            self._known.popitem(last=False)


def _retried(tenant_id: str, thread_id: str) -> Callable[[int, VersionConflict], None]:
    def retried(attempt: int, conflict: VersionConflict) -> None:
        logger.debug("fenced_retried", tenant=tenant_id, thread=thread_id, attempt=attempt,
                     reason="busy" if conflict.expected == "held" else "conflict")
    return retried
