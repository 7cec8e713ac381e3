"""``eventlog log``: the events, like ``git log``, filtered, and ``--follow`` to tail them.

Reading goes through `EventLog.read_all` and its opaque cursor, so following is gap-safe
on every backend: an event that commits late (PostgreSQL) is shown when it becomes
readable, never skipped.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from difflib import get_close_matches

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.render import event_json, event_line
from eventlog.cli.scope import require_session, require_tenant
from eventlog.cli.sealed import Unsealer
from eventlog.events import default_registry
from eventlog.log import EventLog
from eventlog.records import RecordedEvent
from eventlog.transfer import SessionMembership

_PAGE = 1000


@dataclass(frozen=True)
class EventFilter:
    """Which events ``log`` shows; every condition given must hold."""

    stream: str | None = None
    session: SessionMembership | None = None
    types: frozenset[str] | None = None
    actors: frozenset[str] | None = None
    from_position: int | None = None
    to_position: int | None = None
    since: datetime | None = None
    until: datetime | None = None

    def matches(self, event: RecordedEvent) -> bool:
        """Whether ``event`` passes every condition."""
        return (
            (self.stream is None or event.stream_id == self.stream)
            and (self.session is None or self.session.includes(event))
            and (self.types is None or event.type in self.types)
            and (self.actors is None or event.actor in self.actors)
            and (self.from_position is None or event.position >= self.from_position)
            and (self.to_position is None or event.position <= self.to_position)
            and (self.since is None or event.recorded_at >= self.since)
            and (self.until is None or event.recorded_at <= self.until)
        )


async def run(context: Context) -> int:
    """Print the matching events, then (with --follow) the new ones as they commit."""
    args = context.args
    _check_arguments(args)
    for name in ("since", "until"):
        given = getattr(args, name)
        if given is not None and given.said is not None:
            context.err.print(f"--{name} {given.describe()}", style="dim")
    async with context.open() as log:
        event_filter = await _build_filter(log, args)
        if not args.follow:  # a follower waits for late commits anyway
            await settle_or_warn(context, log)
        shown = 0
        printer = Printer(context)
        types = TypeCheck(set(args.types or ()))
        tail = Tail(context, live=not args.follow or _replays(args))
        unsealer = Unsealer(log)  # sealed fields: opened, erased (when, why) or sealed
        async for event in follow(
            log, args.tenant, follow=args.follow, poll_interval=args.poll_interval,
            max_wait=args.max_wait, caught_up=lambda: tail.caught_up(types, args.tenant),
        ):
            types.seen.add(event.type)
            if not tail.live or not event_filter.matches(event):
                continue
            printer.print(await unsealer.event(event))
            shown += 1
            if args.limit is not None and shown >= args.limit:
                break
        else:
            if args.follow:  # only --max-wait ends a follower
                tail.stopped(args.max_wait)
    return EXIT_OK


def _replays(args: argparse.Namespace) -> bool:
    """Whether a follower first prints the events already in the log."""
    return bool(args.from_start or args.from_position is not None or args.since is not None)


@dataclass
class Tail:
    """Where ``--follow`` starts and why it stops: like ``tail -f``, only what commits
    after it reached the end of the log, unless it replays; it says when it is waiting
    and, when ``--max-wait`` ends it, that this is why."""

    context: Context
    live: bool

    def caught_up(self, types: TypeCheck, tenant: str | None) -> None:
        """The log was read to its end: from here on every event is new."""
        types.caught_up(self.context, tenant)
        if not self.live:
            self.live = True
            self.context.err.print("following: new events are printed as they commit "
                                   "(--from-start replays the log first)", style="dim")

    def stopped(self, max_wait: float) -> None:
        """Say that the follower gave up waiting."""
        self.context.err.print(f"stopped following: no new event for {max_wait:g} s "
                               "(--max-wait)", style="dim")


@dataclass
class Printer:
    """Prints events: JSON lines, or lines fitted to the terminal."""

    context: Context

    def print(self, event: RecordedEvent) -> None:
        """Print one event."""
        context = self.context
        if context.json:
            context.print_json(event_json(event))
            return
        context.out.print(event_line(event, context.out.width, full=context.args.full))


@dataclass
class TypeCheck:
    """Tells, once the log has been read to its end, about ``--type`` values that no
    event read so far has: a type the library does not know either is a usage error
    (with the nearest names), a known one is said never to have been written yet."""

    wanted: set[str]
    seen: set[str] = field(default_factory=set)
    done: bool = False

    def caught_up(self, context: Context, tenant: str | None) -> None:
        """Called when the log has been read to its end (once is enough)."""
        if self.done:
            return
        self.done = True
        where = "this log" if tenant is None else f"tenant {tenant!r}"
        for name in sorted(self.wanted - self.seen):
            if name in default_registry:
                context.err.print(f"note: no event of type {name!r} has been written to "
                                  f"{where} yet", style="yellow")
                continue
            near = get_close_matches(name, sorted(self.seen | default_registry.tags), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise CommandError(f"no event of type {name!r} was ever written to {where}, and "
                               f"it is not a type eventlog knows{hint}")


async def follow(
    log: EventLog, tenant_id: str | None, *, follow: bool, poll_interval: float = 0.5,
    max_wait: float | None = None, caught_up: Callable[[], None] | None = None,
) -> AsyncIterator[RecordedEvent]:
    """Every event in log order; with ``follow``, then every new one as it commits.

    Resumes from the cursor of the last page, so nothing is read twice or skipped.
    Following stops after ``max_wait`` seconds without a new event (never when None).
    ``caught_up`` is called each time a read reaches the end of the log.
    """
    cursor: str | None = None
    idle_since = time.monotonic()
    # New events wake the follower at once (this log's appends, PostgreSQL's LISTEN);
    # the poll interval is the fallback for other processes on the other backends.
    async with log.watch() as watch:
        while True:
            watch.clear()
            page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=tenant_id)
            cursor = page.cursor
            for event in page.events:
                yield event
            if page.events:
                idle_since = time.monotonic()
                continue
            if caught_up is not None:
                caught_up()
            if not follow or (max_wait is not None
                              and time.monotonic() - idle_since >= max_wait):
                return
            await watch.wait(poll_interval)


def _check_arguments(args: argparse.Namespace) -> None:
    if (args.stream or args.session) and not args.tenant:
        raise CommandError("--stream and --session need --tenant (ids are per tenant)")
    if not args.follow and (args.max_wait is not None):
        raise CommandError("--max-wait only makes sense with --follow")
    if not args.follow and args.from_start:
        raise CommandError("--from-start only makes sense with --follow")


async def _build_filter(log: EventLog, args: argparse.Namespace) -> EventFilter:
    # A follower may wait for a tenant or session that has no events yet.
    if args.session and not args.follow:
        await require_session(log, args.tenant, args.session)
    elif args.tenant and not args.follow:
        await require_tenant(log, args.tenant)
    return EventFilter(
        stream=args.stream,
        session=SessionMembership(args.session) if args.session else None,
        types=frozenset(args.types) if args.types else None,
        actors=frozenset(args.actors) if args.actors else None,
        from_position=args.from_position,
        to_position=args.to_position,
        since=args.since.value if args.since else None,
        until=args.until.value if args.until else None,
    )
