"""The ``eventlog`` entry point: the parser, the dispatch and the exit statuses."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import logging
import sys
import traceback
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

import structlog
from rich.text import Text

from eventlog.cli import (
    admin,
    adoption,
    completion,
    demo,
    digest,
    logs,
    replay,
    report,
    sessions,
    transfer,
    transparency,
    verify,
)
from eventlog.cli.context import Context, Handler, SharedOptions
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

_COMMAND_MODULES = (
    demo, admin, logs, sessions, replay, report, verify, digest, transparency, transfer,
    adoption, completion,
)


class _JsonErrorParser(argparse.ArgumentParser):
    """argparse, with usage errors printed as one JSON line (for ``--json``)."""

    def error(self, message: str) -> NoReturn:
        sys.exit(_usage_error(f"{self.prog}: {message}", True))


def build_parser(*, json_errors: bool = False) -> argparse.ArgumentParser:
    """The whole command line: every command with its options and the shared ones."""
    common = SharedOptions()
    parser_class = _JsonErrorParser if json_errors else argparse.ArgumentParser
    parser = parser_class(
        prog="eventlog", description=_DESCRIPTION, epilog=EXIT_STATUSES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True,
        parser_class=parser_class)
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
    arguments = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser()
    if not arguments:  # as git does: what the command can do, not a usage error
        parser.print_help()
        return EXIT_OK
    wants_json = "--json" in arguments
    unknown = _unknown_command(parser, arguments)
    if unknown is not None:
        return _usage_error(unknown, wants_json)
    if wants_json:  # argparse's own usage errors as JSON too
        parser = build_parser(json_errors=True)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    saved = structlog.get_config()
    _configure_logging(debug=args.debug)
    try:
        return _run(args, parser)
    finally:
        structlog.configure(**saved)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    context = Context(args, parser)
    handler: Handler = args.handler
    try:
        return asyncio.run(handler(context))
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        status, message = classify(error)
        if args.debug:
            traceback.print_exception(error, file=sys.stderr)
        if context.json:
            print_json_error(message, status)
        else:
            context.err.print(Text.assemble(("error:", "bold red"), " ", message))
        return status


def print_json_error(message: str, status: int) -> None:
    """One JSON line on standard error: the message, the exit status and what it means."""
    kinds = {EXIT_FINDINGS: "findings", EXIT_USAGE: "usage", EXIT_OPERATIONAL: "operational"}
    sys.stderr.write(json.dumps({"error": message, "exit_status": status,
                                 "kind": kinds.get(status, "operational")}) + "\n")
    sys.stderr.flush()


def _unknown_command(parser: argparse.ArgumentParser, arguments: list[str]) -> str | None:
    """The message for a first argument that is no command, with the nearest ones."""
    if not arguments or arguments[0].startswith("-"):
        return None
    names = sorted(_command_names(parser))
    given = arguments[0]
    if given in names:
        return None
    near = difflib.get_close_matches(given, _listed(names), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"unknown command {given!r}{hint} (the commands: {', '.join(_listed(names))})"


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def _listed(names: list[str]) -> list[str]:
    """The commands a person is shown (not the hidden one completion scripts call)."""
    return [name for name in names if not name.startswith("_")]


def _usage_error(message: str, as_json: bool) -> int:
    if as_json:
        print_json_error(message, EXIT_USAGE)
    else:
        sys.stderr.write(f"eventlog: error: {message}\n")
    return EXIT_USAGE


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
