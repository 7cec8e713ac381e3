"""``eventlog replay --as-of``: the views as they stood at a past position or time.

"What did the operator see at 14:02?" The views are rebuilt from the log alone by
`projections.rebuild(log, until_position=…)` or ``until_time=…`` (the same folds the
backends run inline, stopped at that moment) into `SpilledViews`, a temporary file, so a
log of any size replays in bounded memory. Nothing is written to the log.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import datetime

from rich.text import Text

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.options import Moment
from eventlog.cli.progress import CountingLog
from eventlog.cli.render import plural, redact, rows_or_records, when
from eventlog.cli.scope import require_session, require_tenant
from eventlog.log import SpilledViews
from eventlog.transfer import count_events
from projections.checkpoints import CHECKPOINTS, RUNS, SESSIONS
from projections.interrupts import BATCHES
from projections.memory import Row, ViewTables
from projections.query import ViewQuery
from projections.rebuilding import rebuild
from projections.threads import THREAD_CHECKPOINTS, THREAD_VALUES, THREAD_WRITES
from projections.views import STREAM_HEADS, key_columns, metadata

DEFAULT_TABLES = (SESSIONS, RUNS, CHECKPOINTS, BATCHES, THREAD_CHECKPOINTS, THREAD_WRITES)
"""The views shown unless --table says otherwise (the session, run, interrupt and
framework-thread views)."""
OTHER_TABLES = (STREAM_HEADS, THREAD_VALUES)
"""The other views --table may name."""

COLUMNS: Mapping[str, tuple[str, ...]] = {
    SESSIONS: ("tenant_id", "session_id", "latest_checkpoint_id", "latest_step",
               "latest_run_id", "latest_position", "updated_at"),
    RUNS: ("tenant_id", "session_id", "run_id", "first_checkpoint_id", "first_parent_id",
           "first_step", "started_at"),
    CHECKPOINTS: ("tenant_id", "session_id", "version", "checkpoint_id", "step", "run_id",
                  "parent_id", "state_size", "recorded_at"),
    BATCHES: ("tenant_id", "thread_id", "batch_id", "state", "generation", "lease_expires_at",
              "effect_started", "capture_state", "resolution", "reconciled_by", "updated_at"),
    STREAM_HEADS: ("tenant_id", "stream_id", "version", "head_hash", "last_position",
                   "updated_at"),
    THREAD_CHECKPOINTS: ("tenant_id", "thread_id", "namespace", "checkpoint_id", "parent_id",
                         "step", "run_key", "state_encoding", "position", "recorded_at"),
    THREAD_WRITES: ("tenant_id", "thread_id", "namespace", "checkpoint_id", "task_path",
                    "task_id", "idx", "channel", "encoding", "version"),
    THREAD_VALUES: ("tenant_id", "thread_id", "namespace", "channel", "channel_version",
                    "encoding", "digest"),
}
"""The columns shown to people per view (``--json`` gives every column)."""


async def run(context: Context) -> int:
    """Rebuild as of the moment, then print the chosen views, filtered."""
    args = context.args
    moment: Moment = args.as_of
    as_of = moment.value
    tables = tuple(args.tables or DEFAULT_TABLES)
    _check(args, tables)
    with SpilledViews() as views:
        async with context.open() as log:
            if args.session:
                await require_session(log, args.tenant, args.session)
            elif args.tenant:
                await require_tenant(log, args.tenant)
            await settle_or_warn(context, log)
            total = await count_events(log)
            with context.progress() as progress:
                task = progress.add_task("replaying the log", total=total)
                counting = CountingLog(log, lambda n: progress.advance(task, n)).as_log()
                if isinstance(as_of, int):
                    await rebuild(counting, until_position=as_of, into=views)
                else:
                    await rebuild(counting, until_time=as_of, into=views)
        where = {} if args.tenant is None else {"tenant_id": args.tenant}
        keys = key_columns()
        shown = {
            name: [redact(row) for row in select_rows(
                views.select(ViewQuery(name, where, order_by=keys[name])),
                args.tenant, args.session)]
            for name in tables
        }
        last = last_event(views)
    if context.json:
        context.print_json({
            "as_of": as_of, "as_of_read_as": moment.said, "last_position": last[0],
            "last_recorded_at": last[1],
            "views": shown,
        })
        return EXIT_OK
    _print(context, moment, last, shown)
    return EXIT_OK


def select_rows(rows: list[Row], tenant: str | None, session: str | None) -> list[Row]:
    """The rows of one view that belong to the tenant and session (when given)."""
    return [
        row for row in rows
        if (tenant is None or row.get("tenant_id") == tenant)
        and (session is None or session in (row.get("session_id"), row.get("thread_id")))
    ]


def last_event(views: ViewTables | SpilledViews) -> tuple[int | None, datetime | None]:
    """The position and time of the last event folded into ``views`` (None: none was)."""
    heads = views.select(ViewQuery(STREAM_HEADS, order_by=("last_position",),
                                   descending=True, limit=1))
    if not heads:
        return None, None
    return int(heads[0]["last_position"]), heads[0]["updated_at"]


def _check(args: argparse.Namespace, tables: tuple[str, ...]) -> None:
    if args.session and not args.tenant:
        raise CommandError("--session needs --tenant (session ids are per tenant)")
    unknown = [name for name in tables if name not in metadata.tables]
    if unknown:
        known = ", ".join(sorted(metadata.tables))
        raise CommandError(f"unknown view {unknown[0]!r}; the views are: {known}")


def _print(
    context: Context, as_of: Moment, last: tuple[int | None, datetime | None],
    shown: dict[str, list[Row]],
) -> None:
    moment = as_of.describe()
    if last[0] is None:
        context.out.print(Text(f"As of {moment}: the log was empty.", style="bold"))
    else:
        context.out.print(Text(
            f"As of {moment}: the views after event #{last[0]} (recorded {when(last[1])})",
            style="bold",
        ), soft_wrap=False)  # wrapped at the width, between words
    # Columns every shown row has the same value in, because of a filter, say nothing.
    filtered = {"tenant_id"} if context.args.tenant else set()
    if context.args.session:
        filtered |= {"session_id", "thread_id"}
    for name, rows in shown.items():
        columns = COLUMNS.get(name) or (tuple(rows[0]) if rows else ())
        columns = tuple(column for column in columns if column not in filtered)
        context.out.print(rows_or_records(f"{name} ({plural(len(rows), 'row')})", rows,
                                          columns, context.out.width))
