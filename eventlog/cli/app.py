"""The ``eventlog`` entry point: the parser, the dispatch and the exit statuses."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import traceback
from collections.abc import Sequence
from importlib import metadata

import structlog
from rich.text import Text

from eventlog.cli import admin, demo, digest, logs, replay, sessions, transfer, verify
from eventlog.cli.context import Context, Handler
from eventlog.cli.errors import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_OPERATIONAL,
    EXIT_STATUSES_HELP,
    EXIT_USAGE,
    classify,
)

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_OPERATIONAL", "EXIT_USAGE", "build_parser", "main"]

_DESCRIPTION = """\
checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for agent and workflow
engines. Start with `eventlog demo`, then look at what it recorded with `eventlog log`,
`eventlog timeline` and `eventlog verify`."""

_COMMAND_MODULES = (demo, admin, logs, sessions, replay, verify, digest, transfer)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every command with its options and the shared ones."""
    common = argparse.ArgumentParser(add_help=False)
    shared = common.add_argument_group("shared options")
    shared.add_argument(
        "--url", metavar="URL",
        help="the log: sqlite:///path.db, postgresql://user@host/db, file:///dir "
             "(default: $EVENTLOG_URL, else sqlite:///eventlog.db)",
    )
    shared.add_argument(
        "--read-url", metavar="URL",
        help="a hot standby of the PostgreSQL log to read from (log, verify, replay, export, "
             "timeline, stats…); writes still go to --url (default: $EVENTLOG_READ_URL)",
    )
    shared.add_argument(
        "--schema", metavar="NAME",
        help="the PostgreSQL schema (default: $EVENTLOG_SCHEMA, else eventlog)",
    )
    shared.add_argument("--json", action="store_true", help="print JSON for scripts")
    shared.add_argument(
        "--debug", action="store_true", help="show tracebacks and the library's debug logs"
    )
    parser = argparse.ArgumentParser(
        prog="eventlog", description=_DESCRIPTION, epilog=EXIT_STATUSES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMAND_MODULES:
        module.register(commands, common)
    return parser


def _version() -> str:
    try:
        return metadata.version("checkpoint-eventlog")
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``eventlog`` command with ``argv`` (default: the process arguments).

    Returns the exit status; never raises for an ordinary failure (it prints one line to
    standard error instead, and the traceback too under ``--debug``).
    """
    try:
        args = build_parser().parse_args(list(argv) if argv is not None else None)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    saved = structlog.get_config()
    _configure_logging(debug=args.debug)
    try:
        return _run(args)
    finally:
        structlog.configure(**saved)


def _run(args: argparse.Namespace) -> int:
    context = Context(args)
    handler: Handler = args.handler
    try:
        return asyncio.run(handler(context))
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        status, message = classify(error)
        if args.debug:
            traceback.print_exception(error, file=sys.stderr)
        context.err.print(Text.assemble(("error:", "bold red"), " ", message))
        return status


def _configure_logging(*, debug: bool) -> None:
    # The command is the application, so it (unlike the library) configures structlog:
    # warnings and worse on standard error, everything under --debug.
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.DEBUG if debug else logging.WARNING
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
