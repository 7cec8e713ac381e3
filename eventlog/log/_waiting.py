"""How a reader that follows the log waits for new events: `Waiter`, shared by a durable
consumer (`eventlog.log._subscribe.Subscription`) and a plain follower (`Watch`, what
``eventlog log --follow`` uses).

The log's own appends wake its followers at once (`Wakeups`); on PostgreSQL a follower also
LISTENs for the append trigger's notification (`eventlog.storage.pgconsumers.Listener`);
and it polls every ``poll_interval`` seconds whatever happens, so a lost notification costs
at most one interval.

A notification costs the append that sends it (NOTIFY's queue lock and the listener's
wake-up: ~70 µs a commit here, a fifth of a small append), and an append sends one only
while some follower holds the listening lock, that is while it sleeps. So a woken follower
gives the lock up while it reads, and while the log stays busy it does not take it again:
once a read comes up empty it waits `LINGER` and reads again, and only when that read finds
nothing either does it take the lock and sleep. A log appended to faster than once every
`LINGER` notifies about once per burst however many followers it has; the price is up to
`LINGER` of delay for an event that comes while a follower lingers.

On SQLite a follower watches the database and WAL files instead
(`eventlog.storage.filewatch.FileListener`): a write wakes it before the commit is
readable, so after an empty read it reads again a few times at growing intervals (the
listener's ``lingers``) before it sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

from eventlog.storage.defaults import OneWriter

LINGER = 0.02
"""Seconds a woken follower waits after an empty read before reading again (rather than
listening, which makes every append pay for a notification). Below a human's notice and
the poll interval, above the time between appends of a busy log."""


class Wakeups:
    """The in-process wake-up of one log's followers: every append of the log (and of
    its siblings) calls `fire`, which wakes each follower at once."""

    def __init__(self) -> None:
        self._waiting: set[asyncio.Event] = set()

    def fire(self) -> None:
        """Wake every follower waiting now."""
        for event in self._waiting:
            event.set()

    def add(self, event: asyncio.Event) -> None:
        """Wake ``event`` on each later append."""
        self._waiting.add(event)

    def discard(self, event: asyncio.Event) -> None:
        """Stop waking ``event``."""
        self._waiting.discard(event)


async def listen(listener: Any, seconds: float) -> None:
    """Connect ``listener`` (a `Listener`, or None) unless it listens already; once it
    does, it has waited (up to ``seconds``) until every transaction writing when it took
    its listening lock has ended. An append notifies only while someone listens
    (migration 0016), and its trigger asks when its statement runs: an append whose
    statement ran before the lock was taken may commit without notifying, and this wait
    makes sure it has committed before the caller's next read, which then finds its
    events."""
    if listener is None or listener.listening:
        return
    await listener.reconnect(seconds)


class _Woken(asyncio.Event):
    """An `asyncio.Event` that counts how often it was set: which wake-ups a successful
    `Waiter.catch_up` has already covered."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def set(self) -> None:
        self.count += 1
        super().set()


class Waiter:
    """One follower's wake-ups (``log`` is the `EventLog` it follows, ``reads`` the
    backend it reads from when that is not the log's reader): `woken` is set by
    the log's appends and PostgreSQL's notifications. Its reader calls `found` after a
    read that found events and, after one that found none, asks `read_again` before it
    sleeps on `woken`; once awake it calls `awake`."""

    def __init__(self, log: Any, reads: Any = None) -> None:
        self._log = log
        # What the follower reads from: a durable consumer the primary (`EventLog.storage`,
        # where its cursor is decided), a watch the log's reader (a replica, when there is
        # one). It waits for the horizon of that backend, whose read floor the wait raises.
        self._reads = reads
        self.woken = _Woken()
        self.listener: Any = None
        self._lingers: list[float] = []  # what is left to linger before sleeping
        self._woken_before_read = False
        self._caught_up = 0  # the wake-ups (`_Woken.count`) a successful catch_up covers
        self._hidden = False  # a woken-for event may still be hidden: `behind`

    async def open(self, seconds: float) -> None:
        """Take the log's wake-ups, and on PostgreSQL LISTEN (waiting up to ``seconds``
        for the appends that began before, as `listen` does)."""
        self._log.wakeups.add(self.woken)
        make_listener = getattr(self._log.storage, "listener", None)
        if make_listener is not None:
            self.listener = make_listener(self.woken.set)
            await listen(self.listener, seconds)

    async def close(self) -> None:
        """Give the wake-ups up and close the listening connection."""
        self._log.wakeups.discard(self.woken)
        if self.listener is not None:
            await self.listener.close()

    @property
    def pushed(self) -> bool:
        """Whether PostgreSQL's LISTEN is live now (else other processes' appends are
        found by polling)."""
        return bool(self.listener is not None and self.listener.listening)

    def found(self) -> None:
        """A read found events: the log is busy, so the next empty read lingers."""
        self._linger_again()

    def _linger_again(self) -> None:
        self._lingers = list(getattr(self.listener, "lingers", (LINGER,)))

    async def read_again(self, seconds: float) -> bool:
        """After an empty read, before sleeping: whether to read again now. A follower
        that gave the listening lock up when it woke lingers once (`LINGER`; a file
        watch's few ``lingers``) after each read that found events, then takes the lock
        again (waiting, up to ``seconds``, for the appends begun before: they may not have
        notified) and reads once more."""
        listener = self.listener
        if listener is None or not listener.listening or listener.armed:
            return False
        if self._lingers:
            await asyncio.sleep(min(self._lingers.pop(0), seconds))
            return True
        return bool(await listener.arm(seconds))

    @property
    def behind(self) -> bool:
        """Whether the follower must wait (`catch_up`) rather than sleep its poll
        interval: the event of a wake-up was still hidden (an older transaction open on
        the server) when the last wait gave up, or a read after it found nothing; or the
        listener took its lock without seeing every writer begun before it end (its
        ``settled``: one of them may commit unheard)."""
        return self._hidden or not getattr(self.listener, "settled", True)

    async def awake(self, woken: bool, seconds: float) -> None:
        """After sleeping (``woken``: by a wake-up, not the time): reconnect a lost
        listener; or, woken, give the listening lock up while reading (appends need not
        notify until it sleeps again) and wait until the event that woke it is readable
        (every transaction older than it has ended: the horizon of `read_all`).

        The wait is for every wake-up, the log's own appends' too, and with no listener
        (Citus, PgBouncer): an append's commit can stay hidden behind an older
        transaction, and a read that finds nothing consumes the wake-up, so without the
        wait the follower slept its whole poll interval with the event committed."""
        if self.listener is not None and not self.listener.listening:
            await listen(self.listener, seconds)
        elif woken:
            if self.pushed:
                await self.listener.disarm()
                self._linger_again()
            await self.catch_up(seconds)

    async def catch_up(self, seconds: float) -> None:
        """Wait up to ``seconds`` in all until the writers the listener did not see end
        when it took its lock have ended (they notify nobody), and what committed before
        now is readable; `behind` says whether the wait gave up first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        wakes = self.woken.count  # each fired after its commit: covered if this succeeds
        settle_again = getattr(self.listener, "settle_again", None)
        if settle_again is not None and not await settle_again(seconds):
            return
        left = max(deadline - loop.time(), 0.0)
        self._hidden = not await (self._log.wait_readable(left) if self._reads is None
                                  else self._reads.wait_readable(left))
        if not self._hidden:
            self._caught_up = max(self._caught_up, wakes)

    def clear(self) -> None:
        """Forget earlier wake-ups before a read, remembering whether one came that no
        successful `catch_up` covers (`read_nothing` asks)."""
        self._woken_before_read = self.woken.count > self._caught_up
        self.woken.clear()

    def read_nothing(self) -> None:
        """The read after `clear` found nothing. If a wake-up had come before it, its
        event may be committed yet still hidden by an older transaction (the read
        horizon: on PostgreSQL and Citus, even a moment after `catch_up`, when a
        transaction of another database ends between a read's snapshot and its look at
        the server's activity), and the wake-up is spent: so the follower is `behind`
        and waits for the horizon, rather than sleeping its poll interval. A backend
        with one writer shows every commit at once: nothing to wait for."""
        reads = self._log.reader if self._reads is None else self._reads
        if self._woken_before_read and not isinstance(reads, OneWriter):
            self._hidden = True


class Watch:
    """New events' wake-ups without a consumer (``eventlog log --follow``): call `clear`
    before each read and `wait` after one that found nothing; `wait` returns when this log
    (or its siblings) appends, PostgreSQL notifies, or the time is up (or, while the log
    is busy, after `LINGER`, to read again without listening)."""

    def __init__(self, log: Any) -> None:
        self._waiter = Waiter(log)
        self._reads = 0  # reads since the last wait: more than one, and one found events

    async def __aenter__(self) -> Watch:
        await self._waiter.open(1.0)
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._waiter.close()

    def clear(self) -> None:
        """Forget earlier wake-ups: call before each read."""
        self._waiter.clear()
        self._reads += 1

    async def wait(self, seconds: float) -> None:
        """After a read that found nothing: until a wake-up since `clear`, or
        ``seconds``."""
        waiter = self._waiter
        waiter.read_nothing()
        if self._reads > 1:  # every read but the last found events
            waiter.found()
        self._reads = 0
        if await waiter.read_again(seconds):
            return
        if waiter.behind:  # woken for an event still hidden: wait for it, not the poll
            await waiter.catch_up(seconds)
            return
        try:
            await asyncio.wait_for(waiter.woken.wait(), seconds)
        except TimeoutError:
            await waiter.awake(False, seconds)
            return
        await waiter.awake(True, seconds)
