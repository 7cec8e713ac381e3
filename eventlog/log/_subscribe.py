"""Durable consumers of the log: `Subscription` (what `EventLog.subscribe` opens) and the
projection loop over it (`EventLog.project`).

A subscription follows the log with `ConsumerStorage.read_with_cursors` (the horizon and
cursors of `read_all`, so it is gap-safe exactly as `read_all` is) and keeps its position
in the log's own database, written by `Subscription.ack`. It holds its consumer under a
lease with a fencing token (`eventlog.storage.contracts.consumers`): before it hands out
an event it makes sure its lease was renewed recently enough that nobody else can have
taken it over, and a holder that was taken over is refused (`ConsumerFenced`).

In a log with a writer key the row is signed (`ConsumerSeal`): a claim refuses a row the
application did not write, and each write of the holder replaces only the row it wrote
last, so an edit made under it (a cursor moved, a token taken back) is named at its next
write (`ConsumerTampered`) instead of obeyed.

Waiting for new events is `eventlog.log._waiting.Waiter`'s: the log's own appends wake
its subscribers at once; on PostgreSQL a subscriber also LISTENs for the append trigger's
notification, holding the listening lock only while it sleeps; and it polls every
``poll_interval`` seconds whatever happens.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

import msgspec

from eventlog._logging import get_logger
from eventlog.clock import read_clock
from eventlog.errors import (
    ConsumerError,
    ConsumerFenced,
    ConsumerHeld,
    ConsumerTampered,
    InvalidInput,
)
from eventlog.log._waiting import Waiter
from eventlog.records import RecordedEvent, StoredEvent
from eventlog.storage.contracts.consumers import ConsumerClaim, ConsumerRow, ConsumerSeal
from eventlog.telemetry import Database, storage_call, traced
from eventlog.validation import check_id

logger = get_logger(__name__)
PAGE = 500
"""Events read per page while following."""
DEFAULT_LEASE = 30.0
"""Seconds a holder's lease lasts unless renewed (every ack and every wait renews it)."""
STARTS = ("beginning", "end")
"""The named places a new consumer may start: its scope's beginning (a catch-up
subscription, the default) or the end of the log (only what is appended from now on);
any other ``start`` is a cursor `read_all` returned."""

Handler = Callable[[RecordedEvent, Any], Awaitable[None]]
"""A projection's handler: an event and the connection its writes go on."""


def default_holder() -> str:
    """This process's name for itself as a holder: ``host:pid:random``."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{secrets.token_hex(3)}"


def check_subscription(name: Any, tenant_id: Any, types: Any, poll_interval: Any,
                       lease: Any) -> tuple[tuple[str, ...] | None, float, float]:
    """Refuse a bad argument of `EventLog.subscribe`; the types as a sorted tuple and the
    interval and lease as floats."""
    check_id("name", name)
    if tenant_id is not None:
        check_id("tenant_id", tenant_id)
    kinds: tuple[str, ...] | None = None
    if types is not None:
        if isinstance(types, str) or not all(isinstance(kind, str) and kind for kind in types):
            raise InvalidInput("types", f"must be a collection of event type tags, "
                                        f"not {types!r}"[:200])
        kinds = tuple(sorted(set(types)))
        if not kinds:
            raise InvalidInput("types", "must name at least one event type (None: every type)")
    return kinds, _seconds("poll_interval", poll_interval), _seconds("lease", lease)


def _seconds(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 < value <= 86_400):
        raise InvalidInput(field, f"must be a number of seconds above 0 (at most a day), "
                                  f"not {value!r}"[:200])
    return float(value)


def _consumer(arguments: Mapping[str, Any]) -> dict[str, str]:
    """A consumer span's attributes: the consumer's name and tenant scope."""
    subscription = arguments.get("self")
    described = {"eventlog.consumer": getattr(subscription, "name", None),
                 "eventlog.tenant_id": getattr(subscription, "tenant_id", None)}
    return {key: value for key, value in described.items() if isinstance(value, str)}


def _storage(arguments: Mapping[str, Any]) -> Database:
    """The database a consumer reads its scope from and stores its position in."""
    database: Database = arguments["self"]._log.storage.database
    return database


def _found(any_event: bool) -> dict[str, bool]:
    return {"eventlog.found": bool(any_event)}


def _handled(count: int) -> dict[str, int]:
    return {"eventlog.events": int(count)}


class Subscription:
    # ``log`` is the `EventLog` that opened it (typed Any: this module is imported by it).
    """One holder's hold on a durable consumer: iterate it for the events of its scope in
    log order (forever: it waits for new ones), and `ack` them. Open it with
    `EventLog.subscribe`, as an ``async with`` block; leaving the block releases the
    lease (the position stays where the last ack put it)."""

    def __init__(self, log: Any, name: str, *, tenant_id: str | None,
                 types: tuple[str, ...] | None, poll_interval: float, start: str,
                 lease: float, wait: bool, holder: str | None) -> None:
        self._log = log
        self.name = name
        self.tenant_id = tenant_id
        self.types = types
        self.poll_interval = poll_interval
        self.lease = lease
        self._start = start
        self._wait = wait
        self.holder = holder or default_holder()
        self.token = 0
        """The fencing token of this holder's claim (higher than every earlier holder's)."""
        self._cursor: str | None = None  # where the next read starts
        self._acked: str | None = None  # the position stored
        self._pending: deque[tuple[RecordedEvent, str]] = deque()
        self._delivered: OrderedDict[Any, str] = OrderedDict()
        self._idle_cursor: str | None = None  # read past, none delivered since the last ack
        self._renewed = 0.0
        self._waiter = Waiter(log, log.storage)  # it reads the primary: `_read`
        self._open = False
        self._fenced = False
        self._row: ConsumerRow | None = None  # the row as this holder wrote it last
        self._writing = asyncio.Lock()  # one write at a time: each replaces the last one

    # -- opening and closing -------------------------------------------------------------

    async def __aenter__(self) -> Subscription:
        storage = self._log.storage
        start = await self._start_cursor()
        while True:
            now = read_clock(self._log.clock)
            began = time.monotonic()
            try:
                row = await storage.claim_consumer(ConsumerClaim(
                    name=self.name, tenant_id=self.tenant_id, types=self.types, start=start,
                    holder=self.holder, now=now, lease_until=now + timedelta(seconds=self.lease)),
                    self._seal)
                break
            except ConsumerHeld:
                if not self._wait:
                    raise
                await asyncio.sleep(min(self.poll_interval, self.lease / 4))
        self._taken(row, began)
        await self._waiter.open(self._wait_at_most)
        logger.info("consumer_claimed", consumer=self.name, token=self.token,
                    cursor=self._cursor, pushed=self.pushed)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        self._open = False
        await self._waiter.close()
        if not self._fenced and self._row is not None:
            try:
                async with self._writing:
                    row = self._seal.signed(msgspec.structs.replace(
                        self._row, holder=None, lease_until=None))
                    if await self._log.storage.write_consumer(row, self._row):
                        self._row = row
            except Exception:
                logger.warning("consumer_release_failed", consumer=self.name)

    @property
    def _seal(self) -> ConsumerSeal:
        seal: ConsumerSeal = self._log.consumer_seal
        return seal

    async def _write(self, changed: ConsumerRow) -> None:
        """Store ``changed`` (this holder's row with a new position or lease), signed, in
        place of the row this holder wrote last; `ConsumerFenced` or `ConsumerTampered`
        (`_refusal`) when that row is no longer there, having stored nothing."""
        assert self._row is not None
        async with self._writing:
            row = self._seal.signed(changed)
            if not await self._log.storage.write_consumer(row, self._row):
                self._fenced = True
                raise await self._refusal()
            self._row = row

    async def _refusal(self) -> ConsumerError:
        """Why this holder's write found its row changed: `ConsumerFenced` when a newer
        claim or a reset (a valid row with a higher token) or a drop did it, otherwise
        `ConsumerTampered`: the row is not the application's, or it went back (a lower
        token; or this holder's token with another row than it wrote last)."""
        stored = await self._log.storage.consumer(self.name)
        if stored is None:
            return ConsumerFenced(self.name, self.token)
        found = self._seal.problem(stored)
        if found is not None:
            error: ConsumerError = ConsumerTampered(self.name, *found)
        elif stored.token > self.token:
            return ConsumerFenced(self.name, self.token)
        elif stored.token < self.token:
            error = ConsumerTampered(
                self.name, "rolled_back", f"its fencing token went back from {self.token} to "
                                          f"{stored.token} under its holder (a row from "
                                          "before, written back)")
        else:
            error = ConsumerTampered(
                self.name, "rolled_back", "it is no longer the row its holder wrote last "
                                          f"under token {self.token} (a row from before, "
                                          "written back)")
        logger.warning("consumer_tampered", consumer=self.name, reason=error.args[0][:200])
        return error

    @property
    def pushed(self) -> bool:
        """Whether a pushed wake-up (PostgreSQL's LISTEN) is live now: else other
        processes' appends are found by polling every ``poll_interval``."""
        return self._waiter.pushed

    @property
    def position(self) -> str | None:
        """The cursor stored for this consumer: after its last acknowledged event."""
        return self._acked

    async def _start_cursor(self) -> str | None:
        if self._start == "beginning":
            return None
        if self._start == "end":
            end: str | None = await self._log.storage.end_cursor()
            return end
        await self._log.read_all(after=self._start, limit=1)  # refuses a foreign cursor
        return self._start

    def _taken(self, row: ConsumerRow, began: float) -> None:
        self._row = row
        self.token = row.token
        self._cursor = self._acked = row.cursor
        self._renewed = began
        self._open = True

    # -- delivering ------------------------------------------------------------------------

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> RecordedEvent:
        batch = await self.next_batch(1)
        return batch[0]

    async def next_batch(self, most: int, *, wait: bool = True) -> list[RecordedEvent]:
        """Up to ``most`` events (at least one, waiting for it, unless ``wait`` is false:
        then perhaps none), in log order, each delivered once to this holder."""
        if self._fenced:
            raise ConsumerFenced(self.name, self.token)
        if not self._open:
            raise InvalidInput("subscription", "is not open: use it in `async with`")
        while not self._pending:
            self._waiter.clear()  # before the read: an append after it wakes the sleep
            if await self._read_page():
                self._waiter.found()
                continue
            if not wait:
                return []
            self._waiter.read_nothing()
            await self._settle_idle()
            if await self._waiter.read_again(self._wait_at_most):
                continue  # lingered while the log is busy, or listens again: read again
            await self._sleep()
        await self._check_lease()
        batch: list[RecordedEvent] = []
        while self._pending and len(batch) < most:
            event, cursor = self._pending.popleft()
            self._delivered[event.event_id] = cursor
            batch.append(event)
        return batch

    @storage_call("consumer_read", _storage, collection="events", describe=_consumer,
                  outcome=_found)
    async def _read_page(self) -> bool:
        """Read the next page into the pending events; whether it held any event."""
        try:
            rows = await self._log.storage.read_with_cursors(self._cursor, PAGE,
                                                             self.tenant_id)
        except InvalidInput as error:  # only a stored position can be no cursor here
            raise ConsumerTampered(self.name, "unreadable", "its stored position is not a "
                                   f"cursor of this log ({error})") from None
        for stored, cursor in rows:
            self._take(stored, cursor)
        return bool(rows)

    def _take(self, stored: StoredEvent, cursor: str) -> None:
        self._cursor = cursor
        if self.types is None or stored.type in self.types:
            self._pending.append((self._log.decode(stored), cursor))
            self._idle_cursor = None
        elif self._pending:  # acking the last matching event covers this one too
            event, _ = self._pending[-1]
            self._pending[-1] = (event, cursor)
        elif self._delivered:
            last = next(reversed(self._delivered))
            self._delivered[last] = cursor
        else:
            self._idle_cursor = cursor

    async def _settle_idle(self) -> None:
        """Store the cursor past events the filter skipped when nothing delivered waits
        for an ack: a consumer of rare types does not re-read the others after a restart."""
        if self._idle_cursor is not None and not self._delivered:
            await self._store(self._idle_cursor)
            self._idle_cursor = None

    async def _sleep(self) -> None:
        """Wait for a wake-up or the poll interval, renewing the lease as it comes due.

        Woken, it waits (up to a third of the lease at a time, renewing it between) until
        the event that woke it is readable: an older transaction still open on the
        server hides it from reads, and a read that finds nothing must not send the
        subscriber back to sleep its whole poll interval, nor a long wait let its lease
        lapse."""
        if self._waiter.behind:
            await self._waiter.catch_up(self._wait_at_most)
            await self._check_lease()
            return
        left, woken = self.poll_interval, False
        while left > 0:
            step = min(left, self.lease / 3)
            try:
                await asyncio.wait_for(self._waiter.woken.wait(), step)
            except TimeoutError:
                left -= step
                await self._check_lease()
                continue
            woken = True
            break
        await self._waiter.awake(woken, self._wait_at_most)

    @property
    def _wait_at_most(self) -> float:
        """The longest one wait for other transactions may take: the poll interval, and
        never more than a third of the lease, which is renewed between waits."""
        return min(self.poll_interval, self.lease / 3)

    async def _check_lease(self) -> None:
        """Renew the lease once a third of it has passed since the last renewal began, so
        no event is handed out after another holder could have taken over."""
        if time.monotonic() - self._renewed < self.lease / 3:
            return
        began = time.monotonic()
        until = read_clock(self._log.clock) + timedelta(seconds=self.lease)
        assert self._row is not None
        await self._write(msgspec.structs.replace(self._row, lease_until=until))
        self._renewed = began

    # -- acknowledging ---------------------------------------------------------------------

    @storage_call("consumer_ack", _storage, describe=_consumer)
    async def ack(self, event: RecordedEvent) -> None:
        """Store the position after ``event`` (and so after every event delivered before
        it): a consumer reopened later resumes after it. `ConsumerFenced` if another holder
        took the consumer over (nothing stored); `InvalidInput` for an event this holder
        was not delivered or already acknowledged."""
        cursor = self._delivered.get(getattr(event, "event_id", None))
        if cursor is None:
            raise InvalidInput("event", "was not delivered by this subscription, or is "
                                        "already acknowledged")
        await self._store(cursor)
        self._forget_through(event.event_id)

    async def _store(self, cursor: str) -> None:
        began = time.monotonic()
        now = read_clock(self._log.clock)
        assert self._row is not None
        await self._write(msgspec.structs.replace(
            self._row, cursor=cursor, updated_at=now,
            lease_until=now + timedelta(seconds=self.lease)))
        self._acked = cursor
        self._renewed = began

    def _forget_through(self, event_id: Any) -> None:
        while self._delivered:
            first, _ = self._delivered.popitem(last=False)
            if first == event_id:
                return

    # -- projections -----------------------------------------------------------------------

    @traced("eventlog.consumer.project", _consumer, _handled)
    async def project_batch(self, handler: Handler, most: int, *, wait: bool) -> int:
        """Deliver up to ``most`` events to ``handler`` in ONE transaction with the position
        after them (`ConsumerStorage.consumer_transaction`); how many it handled."""
        batch = await self.next_batch(most, wait=wait)
        if not batch:
            await self._settle_idle()
            return 0
        cursor = self._delivered[batch[-1].event_id]
        began = time.monotonic()
        now = read_clock(self._log.clock)
        assert self._row is not None
        async with self._writing:
            row = self._seal.signed(msgspec.structs.replace(
                self._row, cursor=cursor, updated_at=now,
                lease_until=now + timedelta(seconds=self.lease)))
            try:
                async with self._log.storage.consumer_transaction(
                        row, self._row) as connection:
                    for event in batch:
                        await handler(event, connection)
            except ConsumerFenced:
                self._fenced = True
                raise await self._refusal() from None
            except BaseException:
                # Nothing committed: these events are delivered again, from the stored
                # position.
                self._rewind()
                raise
            self._row = row
        self._acked = cursor
        self._renewed = began
        self._forget_through(batch[-1].event_id)
        return len(batch)

    def _rewind(self) -> None:
        self._pending.clear()
        self._delivered.clear()
        self._idle_cursor = None
        self._cursor = self._acked


async def run_projection(subscription: Subscription, handler: Handler, *, batch: int,
                         until_idle: bool) -> int:
    """Fold the subscription's events through ``handler``, ``batch`` per transaction, until
    cancelled (or, ``until_idle``, until it has caught up); how many events it handled."""
    handled = 0
    while True:
        done = await subscription.project_batch(handler, batch, wait=not until_idle)
        handled += done
        if until_idle and done == 0:
            return handled


def resolve_types(types: Sequence[str] | None) -> tuple[str, ...] | None:
    """``types`` as stored: sorted, without repeats."""
    return None if types is None else tuple(sorted(set(types)))


def lag_of(row: ConsumerRow, waiting: list[StoredEvent], now: datetime) -> tuple[int, float]:
    """(events, seconds) a consumer is behind: how many events of its scope after its
    position (``waiting``, in log order) it has not acknowledged, and how long the oldest
    of them has waited (0 when caught up)."""
    matching = [stored for stored in waiting if row.types is None or stored.type in row.types]
    if not matching:
        return 0, 0.0
    return len(matching), max(0.0, (now - matching[0].recorded_at).total_seconds())
