"""``eventlog export`` and ``eventlog import``: move a tenant's log between databases.

The work is `eventlog.transfer` (the file format, the checks, the idempotent import);
this module opens files, drives the progress bar and prints the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eventlog.cli import adoption
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, EXIT_OPERATIONAL, CommandError
from eventlog.cli.files import STDOUT, is_written_in_place, opened_output
from eventlog.cli.lenient import ImportingRegistry
from eventlog.cli.parsers.adoption import FRAMEWORKS
from eventlog.cli.render import pairs_table, plural
from eventlog.cli.scope import require_session, require_tenant
from eventlog.errors import InvalidInput
from eventlog.events import default_registry
from eventlog.transfer import (
    ExportIncomplete,
    ImportRefused,
    check_export,
    export_log,
    import_log,
)


async def run_export(context: Context) -> int:
    """Export to FILE (written whole, then renamed into place; a device or FIFO written
    as it is) or standard output; or, as ``export langgraph|maf TARGET``, into a
    framework's own store."""
    args = context.args
    if args.target is not None:
        if args.file not in FRAMEWORKS:
            raise CommandError(f"export takes one FILE, or langgraph or maf and a TARGET; "
                               f"not {args.file!r} and {args.target!r}")
        if args.session or args.without_state or args.force:
            raise CommandError("--session, --without-state and --force are for an export "
                               "FILE; to a framework use --thread (langgraph) or --workflow "
                               "(maf)")
        return await adoption.run_framework_export(context, args.file, args.target)
    if args.thread or args.workflow or args.allow_type:
        raise CommandError("--thread, --workflow and --allow-type are for `export "
                           "langgraph|maf TARGET`; an export FILE takes --session")
    to_stdout = args.file == STDOUT
    target = Path(args.file)
    # The command is one process doing one thing: blocking file checks cost nothing here.
    # A device or FIFO is written in place, never replaced: only a file's data is at stake.
    in_place = is_written_in_place(args.file)
    if not in_place and target.exists() and not args.force:  # noqa: ASYNC240
        raise CommandError(f"{target} exists; choose another FILE or pass --force")
    async with context.open() as log:
        if args.session:
            await require_session(log, args.tenant, args.session, scan=True)
        else:
            await require_tenant(log, args.tenant)
        with context.progress() as progress, opened_output(args.file) as sink:
            task = progress.add_task("exporting", total=None)
            try:
                summary = await export_log(
                    log, sink, tenant_id=args.tenant, session_id=args.session,
                    with_state=not args.without_state, max_wait=args.max_wait,
                    progress=lambda _phase, done, total: progress.update(
                        task, completed=done, total=total),
                )
            except ExportIncomplete as short:
                raise _incomplete(short, target, in_place) from short
    out = context.err if to_stdout else context.out  # standard output carries the file
    if context.json and not to_stdout:
        context.print_json({"file": str(target), **_fields(summary)})
    else:
        out.print(pairs_table(f"Exported to {'standard output' if to_stdout else target}",
                              _fields(summary).items()))
        if summary.blobs_withheld:
            out.print(f"State withheld: {plural(summary.blobs_withheld, 'blob')} left out. "
                      "An import records them as withheld; `eventlog verify` of the copy "
                      "reports them as a notice, not a finding.")
    return EXIT_OK


async def run_import(context: Context) -> int:
    """Import FILE; a conflicting history exits 1 with nothing written."""
    source = Path(context.args.file)
    if not source.is_file():  # noqa: ASYNC240 - one process, one job: nothing to block
        raise CommandError(f"{source} is not a file")
    # The file is checked whole before the target is opened: a file that is refused
    # leaves no new, empty database behind.
    _check_source(source)
    async with context.open(upgrade=True, create=True) as log:
        with context.progress() as progress, source.open("rb") as handle:  # noqa: ASYNC230
            task = progress.add_task("importing", total=None)
            try:
                summary = await import_log(
                    log, handle, registry=ImportingRegistry(default_registry),
                    progress=lambda _phase, done, total: progress.update(
                        task, completed=done, total=total),
                )
            except ImportRefused as refused:
                raise CommandError(f"import of {source} refused: {refused}",
                                   EXIT_FINDINGS) from refused
            except InvalidInput as error:
                raise _bad_file(source, error) from error
    if context.json:
        context.print_json({"file": str(source), **_fields(summary)})
    else:
        context.out.print(pairs_table(f"Imported {source}", _fields(summary).items()))
        if summary.blobs_withheld:
            context.out.print(
                f"State withheld: the file left out {plural(summary.blobs_withheld, 'blob')} "
                "the imported events reference; recorded in the log as withheld, so "
                "`eventlog verify` reports them as a notice, not a finding.")
    return EXIT_OK


def _incomplete(short: ExportIncomplete, target: Path, in_place: bool) -> CommandError:
    """Exit 3 naming what could not be read, and why."""
    unread = sum(version - seen for version, seen in short.missing.values())
    streams = ", ".join(repr(stream) for stream in sorted(short.missing)[:3])
    if len(short.missing) > 3:
        streams += f" and {len(short.missing) - 3} more"
    where = (f"{'standard output' if str(target) == STDOUT else target} got no end record, "
             "so an import refuses it" if in_place else "no file was written")
    return CommandError(
        f"export of tenant {short.tenant_id!r} stopped: {plural(unread, 'event')} of the "
        f"{plural(short.held, 'event')} it held were not readable after "
        f"{short.max_wait:g} s ({plural(len(short.missing), 'stream')}: {streams}). A "
        "PostgreSQL transaction that began before they committed is still open; end it, "
        f"or wait longer with --max-wait. {where.capitalize()}",
        EXIT_OPERATIONAL)


def _check_source(source: Path) -> None:
    try:
        with source.open("rb") as handle:
            check_export(handle, ImportingRegistry(default_registry))
    except InvalidInput as error:
        raise _bad_file(source, error) from error


def _bad_file(source: Path, error: InvalidInput) -> CommandError:
    """``file: reason`` from the library, said with the file's name."""
    if error.field == "file":
        return CommandError(f"cannot import {source}: {error.reason}")
    return CommandError(f"cannot import {source}: {error}")


def _fields(summary: Any) -> dict[str, Any]:
    return {name: getattr(summary, name) for name in summary.__dataclass_fields__}
