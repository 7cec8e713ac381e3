"""Find: a tenant's sessions, threads and interrupt batches, newest first, cursor-paged.

The list is newest first by the position of each stream's last event: the tenant's events
read backwards by the (tenant, position) index the log already keeps (ids, versions and
positions only), each stream listed where the stream view (``stream_heads``) says its last
event is, a keyset cursor (a position) paging it. So the first page costs what the newest
events hold, flat in how many streams the tenant has, and no index is added to the write
path for it (an index on the view's last position would be written by every append):
docs/decisions/cli.md. An id prefix reads a range of the view's key per kind instead (ids
compare bytewise on every backend). Filters the row answers (kind, time range) are applied
as rows are read; the actor filter reads each candidate's last event, the framework one
seek of its root checkpoint row. A request reads at most `EVENTS_BUDGET` events (or
`SCAN_BUDGET` stream rows): a sparse filter on a large tenant returns what it found with a
cursor to go on from. ``pending`` lists the batches
awaiting an answer through the interrupt view's own index (tenant, state, creation
position); ``question``, ``erased`` and ``held``: see `STATES`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from eventlog.cli.report.index import LANGGRAPH, MAF, SESSION, THREAD
from eventlog.cli.thread_story.graph import INTERRUPT, RESUME
from eventlog.cli.thread_story.values import MAF_ENCODING, decode
from eventlog.cli.thread_story.workflow import requests_pending
from eventlog.errors import EventLogError
from eventlog.events.erasure import ERASURE_STREAM_PREFIX
from eventlog.events.interrupts import batch_stream
from eventlog.events.threads import ThreadCheckpointPut
from eventlog.face import OpenLog
from eventlog.log import EventLog
from projections.interrupts import BATCHES
from projections.query import In, ViewQuery
from projections.threads import THREAD_CHECKPOINTS, THREAD_WRITES
from projections.views import STREAM_HEADS

PAGE_SIZE = 50
SCAN_BUDGET = 5_000
"""The most stream rows one request examines (an id prefix, the erased)."""
EVENTS_BUDGET = 20_000
"""The most events one request of the newest-first list reads."""
_CHUNK = 500
_EVENTS_CHUNK = 2_000
_TOGETHER = 25
"""Rows whose reads (a framework seek, a last event) go out together: on PostgreSQL each
on a connection of the pool; at most this many read for nothing past a full page."""

KINDS = {"session:": "session", "thread:": "thread", "interrupt-batch:": "batch"}
"""Stream prefixes the console lists, and what it calls each."""
_LISTED = tuple(KINDS)
FRAMEWORKS = {"native": SESSION, "langgraph": LANGGRAPH, "agent-framework": MAF,
              "thread": THREAD}
"""The framework filter's values and the report's names for them."""
STATES = ("question", "pending", "unresolved", "failing", "erased", "held")
"""``question``: threads whose latest checkpoint asks a question not yet answered (a
LangGraph interrupt without a resume among its pending writes; an Agent Framework request
for information pending in its state); ``pending``: interrupt batches awaiting an answer;
``unresolved``: interrupt batches whose effect began and has no known outcome (still
running, or its claim ended without finishing: awaiting reconciliation); ``failing``: the
streams the tenant's last verify found a problem in; ``erased``: erased subjects;
``held``: subjects under legal hold."""
UNRESOLVED = ("effect_started", "unresolved")
"""The batch states of an effect whose outcome is not known."""


@dataclass(frozen=True)
class Filters:
    """What a search asks for (each empty: anything)."""

    prefix: str = ""
    kind: str = ""
    actor: str = ""
    framework: str = ""
    state: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def reads_events(self) -> bool:
        """Whether a row must be checked against its stream's events."""
        return bool(self.actor or self.framework)


@dataclass
class Item:
    """One line of the list."""

    kind: str
    ident: str
    stream: str
    position: int
    updated_at: datetime
    events: int
    framework: str = ""
    actor: str = ""
    thread: str = ""
    """For a batch: the thread (or session) it was raised on."""
    state: str = ""


@dataclass(frozen=True)
class Failing:
    """What the tenant's last verify found, for the ``failing`` filter: each stream's
    problems in words (None: no verify has finished)."""

    streams: dict[str, list[str]] | None


@dataclass
class Found:
    """A page of the list, and where the next starts (None: no more)."""

    items: list[Item] = field(default_factory=list)
    cursor: int | None = None
    examined: int = 0
    exhausted_budget: bool = False
    note: str = ""
    """Why the page says less than asked (no verify has run for ``failing``)."""


async def find(log: EventLog, tenant: str, filters: Filters, after: int | None,
               failing: Failing = Failing(None)) -> Found:
    """A page of the tenant's subjects matching ``filters``, newest first, after the
    cursor ``after`` (the last position the previous page showed); ``failing``: what the
    tenant's last verify found (the ``failing`` filter lists it)."""
    if filters.state == "pending":
        return await _batches(log, tenant, filters, after, ("pending",))
    if filters.state == "unresolved":
        return await _batches(log, tenant, filters, after, UNRESOLVED)
    if filters.state == "failing":
        return await _failing(log, tenant, filters, failing)
    if filters.state == "erased":
        return await _erased(log, tenant, filters)
    if filters.state == "held":
        return await _held(log, tenant, filters)
    if filters.prefix:
        return await _by_prefix(log, tenant, filters, after)
    return await _newest(log, tenant, filters, after)


async def _newest(log: EventLog, tenant: str, filters: Filters, after: int | None) -> Found:
    """The tenant's subjects newest first: its events read backwards in log order from
    the cursor (`EventLog.events_newest_first`: only ids, versions and positions), each
    stream listed at the event that is its last (the stream view's row says which), so a
    page costs what the newest events hold, not how many streams the tenant has. The
    cursor is the position of the last event read; a stream written since an earlier
    page moves to the top and is not listed again below it. At most `EVENTS_BUDGET`
    events are read."""
    found = Found()
    before = after
    chunk = PAGE_SIZE * 4
    while found.examined < EVENTS_BUDGET:
        newest = await log.events_newest_first(tenant, before, chunk)
        listed = [stream for stream in dict.fromkeys(event[0] for event in newest)
                  if stream.startswith(_LISTED)]
        heads = {row["stream_id"]: row for row in await log.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": tenant, "stream_id": In(tuple(listed))},
            columns=("stream_id", "version", "last_position", "updated_at")))} if listed else {}
        # A stream at its last event; that event's actor is the stream's last actor.
        rows = [(position, {**heads[stream], "actor": actor or ""})
                for stream, _, position, actor in newest
                if stream in heads and heads[stream]["last_position"] == position]
        for start in range(0, len(rows), _TOGETHER):
            group = rows[start:start + _TOGETHER]
            items = await asyncio.gather(*(_item(log, tenant, row, filters)
                                           for _, row in group))
            for (position, _row), item in zip(group, items, strict=True):
                if item is not None:
                    found.items.append(item)
                    if len(found.items) == PAGE_SIZE:
                        found.examined += sum(1 for event in newest if event[2] >= position)
                        found.cursor = position
                        return found
        found.examined += len(newest)
        if len(newest) < chunk:
            return found
        before = newest[-1][2]
        chunk = min(_EVENTS_CHUNK, chunk * 4)
    found.cursor, found.exhausted_budget = before, True
    return found


async def _by_prefix(log: EventLog, tenant: str, filters: Filters, after: int | None
                     ) -> Found:
    """The subjects whose id starts with the filter's prefix: for each kind, a range of
    the stream view's key (ids compare bytewise on every backend), then newest first by
    their last event's position, the other filters applied. At most `SCAN_BUDGET` ids
    are read (a prefix that matches more lists the newest of those, and says so)."""
    found = Found()
    rows: list[dict[str, Any]] = []
    columns = ("stream_id", "version", "last_position", "updated_at")
    for prefix, kind in KINDS.items():
        if filters.kind and filters.kind != kind:
            continue
        start = prefix + filters.prefix
        rows += await log.query(ViewQuery(STREAM_HEADS, {"tenant_id": tenant,
                                                         "stream_id": start}, columns=columns))
        cursor = start
        while len(rows) < SCAN_BUDGET:
            chunk = await log.query(ViewQuery(
                STREAM_HEADS, {"tenant_id": tenant}, order_by=("stream_id",),
                after=(cursor,), limit=_CHUNK, columns=columns))
            matching = [row for row in chunk if row["stream_id"].startswith(start)]
            rows += matching
            if len(matching) < len(chunk) or len(chunk) < _CHUNK:
                break
            cursor = chunk[-1]["stream_id"]
        else:
            found.exhausted_budget = True
    rows.sort(key=lambda row: row["last_position"], reverse=True)
    for row in rows:
        if after is not None and row["last_position"] >= after:
            continue
        found.examined += 1
        item = await _item(log, tenant, row, filters)
        if item is not None:
            found.items.append(item)
            if len(found.items) == PAGE_SIZE:
                found.cursor = row["last_position"]
                break
    return found


async def _item(log: EventLog, tenant: str, row: dict[str, Any], filters: Filters
                ) -> Item | None:
    stream: str = row["stream_id"]
    kind = next((name for prefix, name in KINDS.items() if stream.startswith(prefix)), None)
    if kind is None or (filters.kind and filters.kind != kind):
        return None
    ident = stream.split(":", 1)[1]
    if filters.prefix and not ident.startswith(filters.prefix):
        return None
    updated: datetime = row["updated_at"]
    if (filters.since is not None and updated < filters.since) or (
            filters.until is not None and updated > filters.until):
        return None
    item = Item(kind, ident, stream, row["last_position"], updated, row["version"])
    # The cheapest check first: the walk read the actor (else one read of the last event)
    if filters.actor:  # before a framework's seek or a question's reads
        if "actor" in row:
            item.actor = row["actor"]
        else:
            last = [e async for e in log.read_stream(tenant, stream, row["version"], limit=1)]
            item.actor = (last[0].actor or "") if last else ""
        if item.actor != filters.actor:
            return None
    if kind == "session":
        item.framework = SESSION
    elif kind == "thread":
        item.framework = await _framework(log, tenant, ident)
    if filters.framework and (kind == "batch"
                              or item.framework != FRAMEWORKS.get(filters.framework)):
        return None
    if filters.state == "question" and (kind != "thread" or not await _asks(
            log, tenant, ident, item.framework, row["version"])):
        return None
    if kind == "batch":
        batch = await log.query(ViewQuery(BATCHES, {"tenant_id": tenant, "batch_id": ident},
                                          columns=("thread_id", "state"), limit=1))
        if batch:
            item.thread, item.state = batch[0]["thread_id"], batch[0]["state"]
    return item


async def _asks(log: EventLog, tenant: str, thread: str, framework: str, version: int
                ) -> bool:
    """Whether the thread waits on a question (`STATES`)."""
    if framework == MAF:
        return await _requests_pending(log, tenant, thread, version)
    return await _interrupted(log, tenant, thread)


async def _interrupted(log: EventLog, tenant: str, thread: str) -> bool:
    """A LangGraph thread's latest root checkpoint (one seek of the view's key,
    descending: its ids are time-ordered) has an interrupt among its pending writes and no
    resume (a subgraph's question is written again in the root namespace as it bubbles
    up)."""
    latest = await log.query(ViewQuery(
        THREAD_CHECKPOINTS, {"tenant_id": tenant, "thread_id": thread, "namespace": ""},
        order_by=("checkpoint_id",), descending=True, limit=1, columns=("checkpoint_id",)))
    if not latest:
        return False
    writes = await log.query(ViewQuery(
        THREAD_WRITES, {"tenant_id": tenant, "thread_id": thread, "namespace": "",
                        "checkpoint_id": latest[0]["checkpoint_id"]}, columns=("channel",)))
    channels = {row["channel"] for row in writes}
    return INTERRUPT in channels and RESUME not in channels


_TAIL = 16
"""The events read back from a workflow thread's head for its latest checkpoint."""


async def _requests_pending(log: EventLog, tenant: str, thread: str, version: int) -> bool:
    """An Agent Framework thread's latest root checkpoint (the last one in the stream's
    tail: its ids are random, not ordered) holds a request for information pending; its
    state is read by the report's safe decoder (JSON, no code)."""
    tail = [event async for event in log.read_stream(
        tenant, f"thread:{thread}", max(1, version - _TAIL + 1), limit=_TAIL)]
    put = next((e.event for e in reversed(tail) if isinstance(e.event, ThreadCheckpointPut)
                and e.event.namespace == ""), None)
    if put is None:
        return False
    digest = bytes.fromhex(put.state_digest)
    try:
        data = (await log.get_blobs(tenant, [digest])).get(digest)
    except EventLogError:  # sealed without the keyring, erased: nothing to tell
        return False
    document = decode(put.state_encoding, data) if data is not None else None
    return isinstance(document, dict) and bool(requests_pending(document))


async def _framework(log: EventLog, tenant: str, thread: str) -> str:
    """What wrote a thread, as one of its root checkpoints says (the report's rule,
    `kind_of_event`): one seek of the thread checkpoint view's key."""
    rows = await log.query(ViewQuery(
        THREAD_CHECKPOINTS, {"tenant_id": tenant, "thread_id": thread, "namespace": ""},
        order_by=("checkpoint_id",), limit=1, columns=("state_encoding", "metadata")))
    if not rows:
        return THREAD
    if rows[0]["state_encoding"] == MAF_ENCODING:
        return MAF
    try:  # JSON text (decoding JSON runs nothing it holds)
        metadata = msgspec.json.decode(rows[0]["metadata"])
    except (msgspec.DecodeError, TypeError):
        return THREAD
    return LANGGRAPH if isinstance(metadata, dict) and "source" in metadata else THREAD


async def _batches(log: EventLog, tenant: str, filters: Filters, after: int | None,
                   states: tuple[str, ...]) -> Found:
    """The batches in one of ``states``, newest first, by the view's (tenant, state,
    created position) index: a page of each state, merged."""
    rows: list[dict[str, Any]] = []
    for state in states:
        rows += await log.query(ViewQuery(
            BATCHES, {"tenant_id": tenant, "state": state}, order_by=("created_position",),
            descending=True, after=(after,) if after is not None else None,
            limit=PAGE_SIZE, columns=("batch_id", "thread_id", "state", "version",
                                      "created_position", "updated_at", "updated_position")))
    rows = sorted(rows, key=lambda row: row["created_position"], reverse=True)
    more = len(rows) >= PAGE_SIZE  # the next page starts below this one's last batch
    rows = rows[:PAGE_SIZE]
    found = Found(examined=len(rows))
    for row in rows:
        ident = row["batch_id"]
        if filters.prefix and not (ident.startswith(filters.prefix)
                                   or row["thread_id"].startswith(filters.prefix)):
            continue
        found.items.append(Item("batch", ident, batch_stream(ident), row["updated_position"],
                                row["updated_at"], row["version"], thread=row["thread_id"],
                                state=row["state"]))
    found.cursor = rows[-1]["created_position"] if more else None
    return found


async def _failing(log: EventLog, tenant: str, filters: Filters, failing: Failing) -> Found:
    """The streams the tenant's last verify found problems in, each with them in words
    (its sessions and threads linked; any other stream named as it is)."""
    if failing.streams is None:
        return Found(note="no verify of this tenant has finished: run it, then ask again")
    found = Found()
    rows = {row["stream_id"]: row for row in await log.query(ViewQuery(
        STREAM_HEADS, {"tenant_id": tenant, "stream_id": In(tuple(failing.streams))},
        columns=("stream_id", "version", "last_position", "updated_at")))
    } if failing.streams else {}
    for stream, problems in failing.streams.items():
        kind = next((name for prefix, name in KINDS.items() if stream.startswith(prefix)),
                    "stream")
        ident = stream.split(":", 1)[1] if kind != "stream" else (stream or "state blobs")
        if filters.prefix and not ident.startswith(filters.prefix):
            continue
        row = rows.get(stream)
        found.examined += 1
        found.items.append(Item(
            kind, ident, stream, row["last_position"] if row else 0,
            row["updated_at"] if row else datetime.min.replace(tzinfo=UTC),
            row["version"] if row else 0, state="; ".join(problems)))
    found.items.sort(key=lambda item: item.position, reverse=True)
    return found


async def _subjects(log: EventLog, tenant: str, subject: str, state: str) -> list[Item]:
    """The sessions and threads named ``subject`` (each a key seek), else the subject
    alone, each carrying ``state``."""
    streams = [f"{prefix}{subject}" for prefix in ("session:", "thread:")]
    rows = await log.query(ViewQuery(
        STREAM_HEADS, {"tenant_id": tenant, "stream_id": In(tuple(streams))},
        columns=("stream_id", "version", "last_position", "updated_at")))
    items = [Item(KINDS[row["stream_id"].split(":", 1)[0] + ":"], subject, row["stream_id"],
                  row["last_position"], row["updated_at"], row["version"], state=state)
             for row in rows]
    return items


async def _erased(log: EventLog, tenant: str, filters: Filters) -> Found:
    """The tenant's erased subjects (each erasure is a stream ``erasure:SUBJECT``: a range
    of the stream view's key), with when, by whom and why; at most `SCAN_BUDGET`."""
    found = Found()
    after: tuple[str] = (ERASURE_STREAM_PREFIX + filters.prefix,)
    while found.examined < SCAN_BUDGET:
        rows = await log.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": tenant}, order_by=("stream_id",), after=after,
            limit=_CHUNK, columns=("stream_id", "version", "last_position", "updated_at")))
        for row in rows:
            stream: str = row["stream_id"]
            if not stream.startswith(ERASURE_STREAM_PREFIX + filters.prefix):
                return found
            found.examined += 1
            subject = stream.removeprefix(ERASURE_STREAM_PREFIX)
            last = [e async for e in log.read_stream(tenant, stream, row["version"], limit=1)]
            payload = last[0].event if last else None
            why = (f"erased {row['updated_at']:%Y-%m-%d %H:%M} by "
                   f"{getattr(payload, 'actor', '') or (last[0].actor if last else '') or '—'}"
                   f": {getattr(payload, 'reason', '')}")
            items = await _subjects(log, tenant, subject, why) or [Item(
                "subject", subject, stream, row["last_position"], row["updated_at"],
                row["version"], state=why)]
            found.items.extend(items)
        if len(rows) < _CHUNK:
            return found
        after = (rows[-1]["stream_id"],)
    found.exhausted_budget = True
    return found


async def _held(log: EventLog, tenant: str, filters: Filters) -> Found:
    """The subjects under legal hold (the tenant's retention stream, read through the
    signed read side), newest hold first, with their sessions and threads."""
    if not isinstance(log, OpenLog):
        return Found()
    holds = sorted(await log.retention.holds(tenant), key=lambda h: h.position, reverse=True)
    found = Found()
    for hold in holds:
        if filters.prefix and not hold.subject.startswith(filters.prefix):
            continue
        found.examined += 1
        why = f"held since {hold.placed_at:%Y-%m-%d %H:%M}: {hold.reason}"
        found.items.extend(await _subjects(log, tenant, hold.subject, why) or [Item(
            "subject", hold.subject, "", hold.position, hold.placed_at, 0, state=why)])
    return found
