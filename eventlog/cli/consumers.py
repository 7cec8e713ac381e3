"""``eventlog consumers``: the durable consumers of the log (`EventLog.subscribe`), with
their scope, position, lag and holder; ``reset NAME --to START`` replays one, ``drop
NAME`` forgets one. A consumer whose row the log refuses (`ConsumerInfo.problem`: an
edited, unsigned or unreadable row) is listed with why, after which the listing exits 1
(findings); the others are listed as ever."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, CommandError
from eventlog.cli.render import plural
from eventlog.records import ConsumerInfo


async def run(context: Context) -> int:
    """List, reset or drop."""
    args = context.args
    if args.action != "list" and not args.name:
        raise CommandError(f"consumers {args.action} needs the consumer's NAME")
    if args.action == "list" and args.name:
        raise CommandError("consumers lists every consumer: give NAME only to reset or drop")
    async with context.open() as log:
        if args.action == "reset":
            await log.reset_consumer(args.name, args.to)
            return _said(context, {"reset": args.name, "to": args.to},
                         f"consumer {args.name!r} reset to {args.to}")
        if args.action == "drop":
            await log.drop_consumer(args.name)
            return _said(context, {"dropped": args.name}, f"consumer {args.name!r} dropped")
        infos = await log.consumers()
    status = EXIT_FINDINGS if any(info.problem for info in infos) else EXIT_OK
    if context.json:
        context.print_json({"consumers": [{
            "name": info.name, "tenant_id": info.tenant_id, "types": info.types,
            "scope": _scope(info), "cursor": info.cursor,
            "lag_events": info.lag_events, "lag_seconds": round(info.lag_seconds, 3),
            "lag_at_least": info.lag_events >= info.lag_limit, "holder": info.holder,
            "lease_until": info.lease_until, "token": info.token,
            "updated_at": info.updated_at, "problem": info.problem} for info in infos]})
        return status
    table = Table(title=f"{plural(len(infos), 'consumer')}", title_justify="left")
    columns = ["name", "scope", "position", "lag (events)", "lag (s)", "holder"]
    for column in columns + (["row"] if status else []):
        table.add_column(column, overflow="fold")
    for info in infos:
        more = "+" if info.lag_events >= info.lag_limit else ""
        cells = [info.name, _scope(info), info.cursor or "(beginning)",
                 "?" if info.problem else f"{info.lag_events}{more}",
                 "?" if info.problem else f"{info.lag_seconds:.1f}", info.holder or "-"]
        if status:
            cells.append(f"refused ({info.problem})" if info.problem else "ok")
        table.add_row(*cells)
    context.out.print(table)
    return status


def _said(context: Context, value: dict[str, Any], line: str) -> int:
    if context.json:
        context.print_json(value)
    else:
        context.out.print(line)
    return EXIT_OK


def _scope(info: ConsumerInfo) -> str:
    where = "the whole log" if info.tenant_id is None else f"tenant {info.tenant_id!r}"
    return where + ("" if info.types is None else " / types " + ", ".join(info.types))
