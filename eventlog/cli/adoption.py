"""``eventlog adopt langgraph|maf SOURCE`` and ``eventlog export langgraph|maf TARGET``:
threads into the log from LangGraph's savers or Agent Framework's file store, and back.

The work is the adapters' (`eventlog.adapters.langgraph_adoption`,
`eventlog.adapters.maf_adoption`), imported when these commands run: the frameworks are
optional (``pip install "checkpoint-eventlog[adopt]"``). This module checks the source
before the log is opened (a source that is refused leaves nothing behind), drives the
progress bar and prints the summary.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.progress import Progress

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, EXIT_OPERATIONAL, CommandError
from eventlog.cli.parsers.adoption import INSTALL
from eventlog.cli.render import pairs_table, plural
from eventlog.cli.scope import require_tenant
from eventlog.errors import VersionConflict
from eventlog.opening import local_path, open_log


def allowed_types(args: argparse.Namespace) -> list[str] | None:
    """``--allow-type`` as given (``module:name``), checked; None when there are none."""
    given: list[str] | None = getattr(args, "allow_type", None)
    for item in given or ():
        module, _, name = item.partition(":")
        if not module or not name or " " in item:
            raise CommandError(f"--allow-type takes MODULE:NAME (such as "
                               f"myapp.models:Order), not {item!r}")
    return given


def _msgpack_pairs(given: list[str] | None) -> list[tuple[str, ...]] | None:
    return None if given is None else [tuple(item.split(":", 1)) for item in given]


def selection(args: argparse.Namespace) -> list[str] | None:
    """The threads or workflows asked for (None: all); the other framework's option is a
    usage error."""
    allowed_types(args)
    wrong = "--workflow" if args.framework == "langgraph" else "--thread"
    if getattr(args, wrong.removeprefix("--")):
        raise CommandError(f"{wrong} is not for {args.framework}: use "
                           f"{'--thread' if wrong == '--workflow' else '--workflow'}")
    chosen: list[str] | None = args.thread if args.framework == "langgraph" else args.workflow
    return chosen


async def run_adopt(context: Context) -> int:
    """Check the source, then adopt into the log (created if new)."""
    args = context.args
    chosen = selection(args)
    # The source is checked before the log is opened: one that is refused leaves no new,
    # empty log behind.
    async with (_source(args.framework, args.source, allowed_types(args)) as (
                    source, named, contents),
                _log(context) as log):
        with context.progress() as progress:
            try:
                report = await _adopt(args, log, source, named, contents, chosen,
                                      _advance(progress, "adopting"))
            except VersionConflict as error:
                raise CommandError(
                    f"a thread changed while it was being adopted (another adoption, or a "
                    f"writer, at the same time): {error}. What was adopted before stays; run "
                    "the same command again to continue", EXIT_OPERATIONAL) from error
    title = (f"Would adopt from {report.source}" if report.dry_run
             else f"Adopted from {report.source}")
    _print(context, title, report)
    return EXIT_OK


@asynccontextmanager
async def _log(context: Context) -> AsyncIterator[Any]:
    """The log (created or upgraded if need be); for a dry run of a local log that does
    not exist yet, an empty one in memory: a dry run creates nothing."""
    path = local_path(context.url)
    if context.args.dry_run and path is not None and not Path(path).exists():  # noqa: ASYNC240
        async with open_log("memory://") as log:
            yield log
        return
    if context.args.dry_run:
        async with context.open() as log:
            yield log
        return
    async with context.open(upgrade=True, create=True) as log:
        yield log


async def _adopt(args: argparse.Namespace, log: Any, source: Any, named: str,
                 contents: Any, chosen: list[str] | None,
                 progress: Callable[[int, int | None], None]) -> Any:
    if args.framework == "langgraph":
        from eventlog.adapters.langgraph_adoption import adopt_langgraph

        return await adopt_langgraph(
            log, source, tenant_id=args.tenant, thread_ids=chosen, dry_run=args.dry_run,
            source=named, allowed_msgpack_modules=_msgpack_pairs(allowed_types(args)),
            progress=progress)
    from eventlog.adapters.maf_adoption import adopt_maf

    return await adopt_maf(log, source, tenant_id=args.tenant,
                           workflow_names=chosen or contents.workflows, dry_run=args.dry_run,
                           source=named, contents=contents,
                           allowed_checkpoint_types=allowed_types(args), progress=progress)


async def run_framework_export(context: Context, framework: str, target: str) -> int:
    """``eventlog export langgraph|maf TARGET``: the tenant's threads into the framework's
    own store, through its own API."""
    args = context.args
    args.framework = framework
    chosen = selection(args)
    async with context.open() as log:
        await require_tenant(log, args.tenant)
        async with _target(framework, target, allowed_types(args)) as (saver, named):
            with context.progress() as progress:
                advance = _advance(progress, "exporting")
                if framework == "langgraph":
                    from eventlog.adapters.langgraph_adoption import export_langgraph

                    report = await export_langgraph(
                        log, saver, tenant_id=args.tenant, thread_ids=chosen, target=named,
                        allowed_msgpack_modules=_msgpack_pairs(allowed_types(args)),
                        progress=advance)
                else:
                    from eventlog.adapters.maf_adoption import export_maf

                    report = await export_maf(
                        log, saver, tenant_id=args.tenant, workflow_names=chosen,
                        target=named, allowed_checkpoint_types=allowed_types(args),
                        progress=advance)
    _print(context, f"Exported to {report.target}", report)
    return EXIT_OK


@asynccontextmanager
async def _source(framework: str, given: str,
                  allowed: list[str] | None) -> AsyncIterator[tuple[Any, str, Any]]:
    """The framework's own store over ``given``, checked: (store, its name, the file
    store's contents for maf)."""
    if framework == "langgraph":
        try:
            from eventlog.adapters.langgraph_sources import describe_url, open_langgraph_saver
        except ImportError as error:
            raise _missing(error) from error
        async with open_langgraph_saver(given) as saver:
            yield saver, describe_url(given), None
        return
    try:
        from agent_framework import FileCheckpointStorage

        from eventlog.adapters.maf_adoption import file_store_workflows
    except ImportError as error:
        raise _missing(error) from error
    contents = await asyncio.to_thread(file_store_workflows, given)
    yield FileCheckpointStorage(given, allowed_checkpoint_types=allowed), given, contents


@asynccontextmanager
async def _target(framework: str, given: str,
                  allowed: list[str] | None) -> AsyncIterator[tuple[Any, str]]:
    if framework == "langgraph":
        try:
            from eventlog.adapters.langgraph_sources import describe_url, open_langgraph_saver
        except ImportError as error:
            raise _missing(error) from error
        async with open_langgraph_saver(given, target=True) as saver:
            yield saver, describe_url(given)
        return
    try:
        from agent_framework import FileCheckpointStorage
    except ImportError as error:
        raise _missing(error) from error
    yield FileCheckpointStorage(given, allowed_checkpoint_types=allowed), given


def _missing(error: ImportError) -> CommandError:
    return CommandError(f"this command needs the framework's own store ({error.name} is not "
                        f"installed): {INSTALL}")


def _advance(progress: Progress, what: str) -> Callable[[int, int | None], None]:
    task = progress.add_task(what, total=None)
    return lambda done, total: progress.update(task, completed=done, total=total)


def _print(context: Context, title: str, report: Any) -> None:
    fields = asdict(report)
    if context.json:
        context.print_json(fields)
        return
    rows = [
        ("source", report.source), ("target", report.target),
        ("threads", f"{plural(len(report.threads), 'thread')}"
                    + (f": {', '.join(report.threads)}" if report.threads else "")),
        ("checkpoints", plural(report.checkpoints, "checkpoint")),
        ("pending writes", plural(report.writes, "pending write")),
        ("already there", plural(report.skipped, "checkpoint")),
    ]
    context.out.print(pairs_table(title, rows))
