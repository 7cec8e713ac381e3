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
from typing import Any

from eventlog.cli.context import Context, add_command
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.options import TIME_HELP, non_negative_float, positive_int, time_moment
from eventlog.cli.render import event_json, event_line, when
from eventlog.cli.scope import require_session, require_tenant
from eventlog.events import default_registry
from eventlog.log import EventLog
from eventlog.records import RecordedEvent
from eventlog.transfer import SessionMembership

_PAGE = 1000


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``log``."""
    parser = add_command(
        commands, common, "log", "show events in log order, filtered; --follow tails them", run,
        description="Show events in log order (like `git log`), oldest first. Filters "
        "combine. With --follow, keep printing events as they commit (gap-safe).",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's events")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--stream", metavar="S", help="only this stream (needs --tenant)")
    which.add_argument(
        "--session", metavar="S",
        help="only this session or framework thread (LangGraph, Agent Framework): its "
             "checkpoints, pending writes and interrupt batches (needs --tenant)",
    )
    parser.add_argument(
        "--type", metavar="TYPE", action="append", dest="types",
        help="only events of this type (repeat for several)",
    )
    parser.add_argument("--from-position", type=positive_int, metavar="N",
                        help="only events at position N or later")
    parser.add_argument("--to-position", type=positive_int, metavar="N",
                        help="only events at position N or earlier")
    parser.add_argument("--since", type=time_moment, metavar="TIME",
                        help=f"only events recorded at or after TIME: {TIME_HELP}")
    parser.add_argument("--until", type=time_moment, metavar="TIME",
                        help="only events recorded at or before TIME (as --since)")
    parser.add_argument("--full", action="store_true",
                        help="show every field of every event whole (lines may wrap); by "
                             "default lines fit the terminal and say how many fields they "
                             "leave out")
    parser.add_argument("--limit", type=positive_int, metavar="N",
                        help="stop after N events")
    parser.add_argument("--follow", "-f", action="store_true",
                        help="print events as they commit, from now on (as tail -f), until "
                             "interrupted or --max-wait")
    parser.add_argument("--from-start", action="store_true",
                        help="with --follow: first print the events already there (implied "
                             "by --from-position and --since)")
    parser.add_argument("--poll-interval", type=non_negative_float, default=0.5,
                        metavar="SECONDS", help="with --follow: how often to look (0.5)")
    parser.add_argument("--max-wait", type=non_negative_float, metavar="SECONDS",
                        help="with --follow: stop after SECONDS without a new event")


@dataclass(frozen=True)
class EventFilter:
    """Which events ``log`` shows; every condition given must hold."""

    stream: str | None = None
    session: SessionMembership | None = None
    types: frozenset[str] | None = None
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
        async for event in follow(
            log, args.tenant, follow=args.follow, poll_interval=args.poll_interval,
            max_wait=args.max_wait, caught_up=lambda: tail.caught_up(types, args.tenant),
        ):
            types.seen.add(event.type)
            if not tail.live or not event_filter.matches(event):
                continue
            printer.print(event)
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
    """Prints events: JSON lines, or lines fitted to the terminal under a line naming
    the date whenever it changes."""

    context: Context
    day: str = ""

    def print(self, event: RecordedEvent) -> None:
        """Print one event."""
        context = self.context
        if context.json:
            context.print_json(event_json(event))
            return
        day = when(event.recorded_at)[:10]
        if day != self.day:
            context.out.print(f"── {day} (UTC) ──", style="dim")
            self.day = day
        context.out.print(event_line(event, context.out.width, full=context.args.full,
                                     date=False))


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
        from_position=args.from_position,
        to_position=args.to_position,
        since=args.since.value if args.since else None,
        until=args.until.value if args.until else None,
    )
