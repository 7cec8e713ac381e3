"""The ``eventlog`` entry point: the parser, the dispatch and the exit statuses.

A command's module (and what it imports: the stores, rich, the report's renderer, the
adapters' adoption) is imported only when that command runs: `main` builds the parser of
the command named on the line from its light declaration in `eventlog.cli.parsers`, with
every other command listed by its `COMMANDS` entry alone. ``eventlog --help`` imports no
declaration, ``eventlog CMD --help`` CMD's alone, and no command module; ``eventlog
completion`` (which describes every command) builds every declaration.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import logging
import sys
import traceback
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from eventlog.cli.context import Context, Handler, SharedOptions
from eventlog.cli.errors import (
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_OPERATIONAL,
    EXIT_STATUSES_HELP,
    EXIT_USAGE,
    KINDS,
    classify,
)

__all__ = ["EXIT_FINDINGS", "EXIT_NOTHING", "EXIT_OK", "EXIT_OPERATIONAL", "EXIT_USAGE",
           "build_parser", "main"]

_DESCRIPTION = """\
checkpoint-eventlog: an event-sourced, hash-chained checkpoint log for agent and workflow
engines. Start with `eventlog demo`, then look at what it recorded with `eventlog log`,
`eventlog timeline` and `eventlog verify`."""

COMMANDS: dict[str, tuple[str, str | None]] = {
    "demo": ("demo", "play an agent workflow on a real log and show what it recorded"),
    "migrate": ("admin", "bring the database's schema up to date"),
    "stats": ("admin", "count events, streams, sessions, threads, runs, batches, blob bytes"),
    "cleanup": ("admin", "run one bounded interrupt maintenance pass"),
    "retention": ("retention", "purge state past a tenant's retention policy"),
    "hold": ("retention", "place, release or list legal holds"),
    "log": ("logs", "show events in log order, filtered; --follow tails them"),
    "consumers": ("consumers", "list durable consumers with their lag; reset or drop one"),
    "timeline": ("sessions", "one session's or framework thread's story in time order"),
    "inspect": ("sessions",
                "one interrupt batch and its audit trail, or one checkpoint of a thread"),
    "replay": ("replay", "show the views as they stood at a past position or time"),
    "report": ("report", "write the incident report: one self-contained HTML file"),
    "serve": ("serve", "serve a read-only investigation console over the log"),
    "verify": ("verify", "check every hash chain and every view against the log"),
    "digest": ("digest", "write every stream's head and one digest over them"),
    "tree-head": ("transparency", "sign the head of a tenant's transparency tree"),
    "prove": ("transparency", "prove an event is under a signed head, or two heads agree"),
    "check-proof": ("transparency", "check a proof against a signed head, with no database"),
    "witness": ("transparency", "keep the newest head of each log; refuse forks and rollbacks"),
    "verifier-key": ("transparency", "print the verifier key tlog tools check heads with"),
    "tree-rebuild": ("transparency", "rebuild a tenant's damaged tree from its events"),
    "keys": ("keys", "make a keyring, rotate its keys, print its public key"),
    "erase": ("keys", "erase a subject: destroy its data key, record why"),
    "export": ("transfer", "write a tenant's (or one session's) log to a file"),
    "import": ("transfer", "append an exported file's events to this log"),
    "adopt": ("adoption", "bring LangGraph or Agent Framework checkpoints into the log"),
    "completion": ("completion", "print a shell completion script"),
    "__complete": ("completion", None),
}
"""Each command, in the order ``eventlog --help`` lists them: the module under
`eventlog.cli.parsers` whose ``register`` adds it (the command's handlers are in the
module of the same name under `eventlog.cli`), and its summary (None: not listed). A test
holds these to what the modules register."""

_NEEDS_EVERY_COMMAND = frozenset({"completion"})
"""Commands that describe the whole command line, so get the parser of every command."""


class _JsonErrorParser(argparse.ArgumentParser):
    """argparse, with usage errors printed as one JSON line (for ``--json``)."""

    def error(self, message: str) -> NoReturn:
        sys.exit(_usage_error(f"{self.prog}: {message}", True))


def build_parser(*, json_errors: bool = False) -> argparse.ArgumentParser:
    """The whole command line: every command with its options and the shared ones."""
    return _build(json_errors=json_errors, modules=None)


def _build(*, json_errors: bool, modules: Collection[str] | None) -> argparse.ArgumentParser:
    """The command line with the commands of ``modules`` (None: all) registered in full;
    every other command is listed by its name and summary alone."""
    common = SharedOptions()
    parser_class = _JsonErrorParser if json_errors else argparse.ArgumentParser
    parser = parser_class(
        prog="eventlog", description=_DESCRIPTION, epilog=EXIT_STATUSES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show program's version number and exit")
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True,
        parser_class=parser_class)
    for name, (module, summary) in COMMANDS.items():
        if name in commands.choices:  # its module registered it with an earlier command
            continue
        if modules is None or module in modules:
            _command_module(module).register(commands, common)
        elif summary is not None:
            commands.add_parser(name, help=summary, add_help=False)
        else:
            commands.add_parser(name, add_help=False)
    return parser


def _parser_for(arguments: list[str], *, json_errors: bool = False) -> argparse.ArgumentParser:
    """The parser ``arguments`` need: the named command's module's alone (all of them
    for a command that describes every command; none before a command is named)."""
    named = next((argument for argument in arguments if not argument.startswith("-")), None)
    if named is None:
        return _build(json_errors=json_errors, modules=())
    if named in _NEEDS_EVERY_COMMAND or named not in COMMANDS:
        return build_parser(json_errors=json_errors)
    return _build(json_errors=json_errors, modules={COMMANDS[named][0]})


def _command_module(name: str) -> Any:
    """The module of `eventlog.cli.parsers` that registers a command (imported when first
    asked)."""
    return importlib.import_module(f"eventlog.cli.parsers.{name}")


class _Version(argparse.Action):
    """``--version``: the installed version, read from the package metadata when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {_version()}\n")
        parser.exit()


def _version() -> str:
    from importlib import metadata  # ~20 ms: only for --version

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
    parser = _parser_for(arguments)
    if not arguments:  # as git does: what the command can do, not a usage error
        parser.print_help()
        return EXIT_OK
    wants_json = "--json" in arguments
    unknown = _unknown_command(parser, arguments)
    if unknown is not None:
        return _usage_error(unknown, wants_json)
    if wants_json:  # argparse's own usage errors as JSON too
        parser = _parser_for(arguments, json_errors=True)
    try:
        args, extras = parser.parse_known_args(arguments)
        if extras:
            _refuse_unrecognized(parser, args, extras)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    with _command_logging(debug=args.debug):
        return _run(args, parser)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # asyncio (with ssl, socket and inspect) loads for a command that runs, not for the
    # parser: ``eventlog --help`` and ``--version`` need no event loop.
    import asyncio

    context = Context(args, parser)
    handler: Handler = args.handler
    try:
        return asyncio.run(handler(context))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:
        status, message = classify(error)
        if args.debug:
            traceback.print_exception(error, file=sys.stderr)
        if context.json:
            print_json_error(message, status)
        else:
            from rich.text import Text  # as the command's consoles are: when it runs

            context.err.print(Text.assemble(("error:", "bold red"), " ", message))
        return status


def print_json_error(message: str, status: int) -> None:
    """One JSON line on standard error: the message, the exit status and what it means."""
    sys.stderr.write(json.dumps({"error": message, "exit_status": status,
                                 "kind": KINDS.get(status, "operational")}) + "\n")
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


def _refuse_unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace,
                         extras: list[str]) -> NoReturn:
    """Exit 2 through the named command's own parser (its usage, not the top level's),
    suggesting the nearest of its options for each mistyped one."""
    command = _subcommand(parser, args.command) or parser
    options = [option for action in command._actions for option in action.option_strings
               if option.startswith("--")]
    near = [match for given in extras if given.startswith("--")
            for match in difflib.get_close_matches(given.split("=", 1)[0], options, n=1,
                                                   cutoff=0.6)]
    hint = f"; did you mean {' or '.join(dict.fromkeys(near))}?" if near else ""
    command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser | None = action.choices.get(name)
            return found
    return None


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


@contextmanager
def _command_logging(*, debug: bool) -> Iterator[None]:
    """The library's logs shown for one run of a command, the caller's set-up restored
    after. The library logs through the standard library's ``eventlog.*`` loggers unless
    a host configured structlog (`eventlog._logging`); the command is the application, so
    it shows their warnings and worse on standard error, everything under --debug, one
    line each: the time (UTC), the level, the event and its values. structlog is not
    imported (with the rich it loads, ~80 ms of every command's start-up)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogLine())
    loggers = [logging.getLogger(name) for name in ("eventlog", "projections")]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if debug else logging.WARNING)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


class _LogLine(logging.Formatter):
    """``2026-12-06T16:27:53.819Z [warning ] event key=value …``."""

    def format(self, record: logging.LogRecord) -> str:
        from datetime import UTC, datetime

        moment = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        line = (f"{moment.replace('+00:00', 'Z')} [{record.levelname.lower():<8}] "
                f"{record.getMessage()}")
        if record.exc_info is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line
