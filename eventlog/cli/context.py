"""What every command gets: its arguments, where to print, and how to open the log.

Every command's parser is built with `add_command` and `SharedOptions` from here, so this
module imports neither rich nor the log's stores: the consoles and the progress display
are loaded when a command runs (``eventlog CMD --help`` builds the parser and runs none),
and `eventlog.opening` when a command first asks where its log is (the auditor's
commands never do: they import nothing that opens a log).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventlog.cli.errors import EXIT_OPERATIONAL, EXIT_STATUSES_HELP, EXIT_USAGE, CommandError
from eventlog.cli.examples import examples_help
from eventlog.clock import Clock, system_clock
from eventlog.errors import SchemaError, SchemaNotCurrent, StorageError, StoreLocked

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from eventlog.face import OpenLog

Handler = Callable[["Context"], Coroutine[Any, Any, int]]
"""A command: runs with its context and returns the exit status."""

_PIPE_WIDTH = 120  # tables written to a file or pipe get this width, not rich's 80


@dataclass
class Context:
    """One command's invocation: parsed arguments, the parser that parsed them (what
    ``completion`` describes), consoles and the log's address."""

    args: argparse.Namespace
    parser: argparse.ArgumentParser
    out: Console = field(init=False)
    err: Console = field(init=False)

    def __post_init__(self) -> None:
        self.out = _console(sys.stdout)
        self.err = _console(sys.stderr)

    @property
    def url(self) -> str:
        """The log URL: ``--url``, else ``$EVENTLOG_URL``, else the embedded default."""
        from eventlog.opening import DEFAULT_URL

        given: str | None = getattr(self.args, "url", None)
        return given or os.environ.get("EVENTLOG_URL") or DEFAULT_URL

    @property
    def read_url(self) -> str | None:
        """A replica to read from: ``--read-url``, else ``$EVENTLOG_READ_URL``, else None."""
        given: str | None = getattr(self.args, "read_url", None)
        return given or os.environ.get("EVENTLOG_READ_URL") or None

    @property
    def schema(self) -> str:
        """The PostgreSQL schema: ``--schema``, else the URL's ``?schema=``, else
        ``$EVENTLOG_SCHEMA``, else the default."""
        from eventlog.opening import DEFAULT_SCHEMA, url_schema

        given: str | None = getattr(self.args, "schema", None)
        in_url = url_schema(self.url) if self.is_postgres else None
        return given or in_url or os.environ.get("EVENTLOG_SCHEMA") or DEFAULT_SCHEMA

    @property
    def actor(self) -> str | None:
        """Who a command that appends acts as: ``--actor``, else ``$EVENTLOG_ACTOR``, else
        None (its events then name nobody); a principal the log would refuse is a usage
        error."""
        from eventlog.errors import InvalidInput
        from eventlog.validation import check_actor

        given: str | None = getattr(self.args, "actor", None)
        actor = given if given is not None else os.environ.get("EVENTLOG_ACTOR") or None
        if actor is None:
            return None
        try:
            return check_actor(actor, "--actor" if given is not None else "EVENTLOG_ACTOR")
        except InvalidInput as error:
            raise CommandError(str(error), EXIT_USAGE) from error

    @property
    def keyring(self) -> str | None:
        """The keyring file: ``--keyring``, else ``$EVENTLOG_KEYRING``, else None."""
        given: str | None = getattr(self.args, "keyring", None)
        return given or os.environ.get("EVENTLOG_KEYRING") or None

    @property
    def writer_key_files(self) -> list[str]:
        """The writer public key files: each ``--writer-key``, else
        ``$EVENTLOG_WRITER_KEY``, else none."""
        given: list[str] = getattr(self.args, "writer_key", None) or []
        if given:
            return given
        return [os.environ["EVENTLOG_WRITER_KEY"]] if os.environ.get(
            "EVENTLOG_WRITER_KEY") else []

    def writer_keys(self) -> list[str]:
        """The text of each writer public key file (PEM or verifier keys)."""
        texts = []
        for file in self.writer_key_files:
            try:
                texts.append(Path(file).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"cannot read the writer key {file}: "
                                   f"{getattr(error, 'strerror', None) or error}",
                                   EXIT_USAGE) from error
        return texts

    @property
    def json(self) -> bool:
        """Whether to print JSON for scripts instead of tables for people."""
        return bool(getattr(self.args, "json", False))

    def shown_url(self) -> str:
        """The URL with any password masked, for messages."""
        return mask_password(self.url)

    @property
    def is_postgres(self) -> bool:
        """Whether the log is on PostgreSQL (where ``--schema`` applies)."""
        return self.url.partition("://")[0].lower().startswith("postgres")

    def where(self) -> str:
        """The log's address for messages: the URL, and the schema on PostgreSQL."""
        shown = self.shown_url()
        return f"schema {self.schema!r} of {shown}" if self.is_postgres else shown

    def connection_args(self) -> str:
        """The options that reach this same log from another command (``""`` when the
        defaults and the environment already do): ``--url`` as given, ``--schema`` on
        PostgreSQL whenever it is not the default, ``--distributed`` when given. A password
        is masked, never printed."""
        from eventlog.opening import DEFAULT_SCHEMA, url_schema

        parts = []
        if getattr(self.args, "url", None) is not None:
            parts += ["--url", self.shown_url()]
        if self.is_postgres and self.schema not in (DEFAULT_SCHEMA, url_schema(self.url)):
            parts += ["--schema", self.schema]
        if getattr(self.args, "distributed", False):
            parts += ["--distributed"]
        return "".join(f" {shlex.quote(part)}" for part in parts)

    @asynccontextmanager
    async def open(
        self, *, upgrade: bool = False, create: bool = False, clock: Clock = system_clock,
        **options: Any,
    ) -> AsyncIterator[OpenLog]:
        """Open the log; a missing or unreachable database is one clear error.

        Reading commands pass neither flag: they never create a database or change its
        schema, so a mistyped path is reported instead of becoming a new empty log.
        Events of types this process does not know are read as `OpaqueEvent`s (see
        `eventlog.cli.lenient`). ``options`` go to `open_log` as they are.
        """
        from eventlog.cli.lenient import LenientRegistry
        from eventlog.events import default_registry
        from eventlog.opening import open_log

        if getattr(self.args, "command", None) in ACTING:  # a bad --actor: before any look
            options.setdefault("actor", self.actor)
        self._require_directory()
        if not create:
            self._require_existing()
        if getattr(self.args, "distributed", False):
            if not self.is_postgres:
                raise CommandError("--distributed needs a PostgreSQL log (a Citus "
                                   f"coordinator), not {self.shown_url()}", EXIT_USAGE)
            options["distributed"] = True
        if self.keyring is not None and "keyring" not in options:
            options["keyring"] = self.keyring
        if self.writer_key_files and "writer_keys" not in options:
            options["writer_keys"] = self.writer_keys()
        opener = open_log(
            self.url, schema=self.schema, upgrade=upgrade, clock=clock,
            registry=LenientRegistry(default_registry), read_url=self.read_url, **options,
        )
        try:
            log = await opener.__aenter__()
        except SchemaNotCurrent as error:
            raise CommandError(self._not_current(error), EXIT_OPERATIONAL) from error
        except SchemaError as error:
            raise CommandError(
                f"cannot open the log at {self.where()}: {error}", EXIT_OPERATIONAL
            ) from error
        except (StorageError, StoreLocked, OSError) as error:
            raise CommandError(
                f"cannot open the log at {self.shown_url()}: {error}", EXIT_OPERATIONAL
            ) from error
        try:
            yield log
        except BaseException as error:
            if not await opener.__aexit__(type(error), error, error.__traceback__):
                raise
        else:
            await opener.__aexit__(None, None, None)

    def _not_current(self, error: SchemaNotCurrent) -> str:
        command = self.args.command
        if error.found is None:
            check = (" Is --schema right (or $EVENTLOG_SCHEMA)? `eventlog demo` prints the "
                     "options that reach the log it wrote." if self.is_postgres else "")
            return (f"no event log at {self.where()}: it holds no eventlog tables.{check} "
                    f"(`eventlog migrate{self.connection_args()}` would create an empty one "
                    "there.)")
        return (f"the log at {self.where()} is at schema revision {error.found}, this "
                f"version of eventlog needs {error.needed}: run `eventlog migrate"
                f"{self.connection_args()}` to upgrade it (`eventlog {command}` never changes "
                "a schema)")

    def _require_directory(self) -> None:
        """Refuse a local log whose directory does not exist, for every command alike: a
        writer creates the database (or the file store's directory), never the
        directories above it, so a mistyped path is an error rather than a new tree."""
        from eventlog.opening import local_path

        path = local_path(self.url)
        if path is None or str(path) == ":memory:":
            return
        directory = Path(path).parent
        if not directory.is_dir():
            raise CommandError(
                f"no log at {self.shown_url()}: the directory {directory} does not exist "
                f"(create it first, e.g. `mkdir -p {shlex.quote(str(directory))}`)",
                EXIT_OPERATIONAL,
            )

    def _require_existing(self) -> None:
        from eventlog.opening import local_path

        path = local_path(self.url)
        if path is not None and str(path) != ":memory:" and not Path(path).exists():
            raise CommandError(
                f"no log at {self.shown_url()}: {path} does not exist "
                "(`eventlog migrate` creates an empty one, `eventlog demo` a sample)",
                EXIT_OPERATIONAL,
            )

    def print_json(self, value: Any) -> None:
        """Write ``value`` as one line of JSON to standard output."""
        from eventlog.cli.render import jsonable

        sys.stdout.write(json.dumps(jsonable(value), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def progress(self) -> Progress:
        """A transient progress display on standard error, shown only on a terminal."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        return Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
            disable=not self.err.is_terminal,
        )


def _console(stream: Any) -> Console:
    from eventlog.cli.console import SafeConsole  # rich, loaded when a command runs

    terminal = stream.isatty() if hasattr(stream, "isatty") else False
    width = None if terminal else int(os.environ.get("COLUMNS", _PIPE_WIDTH))
    # markup=False: ids and event data are printed as they are, never read as markup;
    # SafeConsole: and a stored control character as its escape, never acted on.
    return SafeConsole(file=stream, width=width, highlight=False, markup=False, soft_wrap=True)


def invoked_as() -> str:
    """How to run this command again from the same shell: ``eventlog`` when that name
    finds this program on PATH, else the path it was started by (``.venv/bin/eventlog``
    after the README's set-up, which never activates the virtualenv)."""
    started = sys.argv[0] if sys.argv else ""
    if Path(started).name != "eventlog":  # run in-process, or as python -m
        return "eventlog"
    on_path = shutil.which("eventlog")
    if on_path is not None and Path(on_path).resolve() == Path(started).resolve():
        return "eventlog"
    return shlex.quote(started)


def mask_password(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by ``***``."""
    return re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", url)


WRITERS = frozenset({"demo", "migrate", "cleanup", "import", "adopt", "tree-head", "prove",
                     "keys", "erase", "tree-rebuild"})
"""Commands that write (the transparency tree's integration too, on the primary): a hot
standby (``--read-url``) is no use to them."""
ACTING = frozenset({"demo", "cleanup", "import", "adopt"})
"""Commands that append events (an import appends its own record of withheld state; the
imported events keep the actors they were recorded with): they take ``--actor`` (else
``$EVENTLOG_ACTOR``), the principal their events are recorded as appended by. The
transparency commands write only the tree (derived data), never an event."""
NO_LOG = frozenset({"completion"})
"""Commands that never open a log: no connection options, no ``--json``."""
AUDITORS = frozenset({"check-proof", "witness", "verifier-key"})
"""Commands that never open a log but print JSON for scripts: no connection options."""


class SharedOptions(argparse.ArgumentParser):
    """The options commands share, in parts: each command is given only the parts that
    act on it (`add_command` asks `parents_for`)."""

    def __init__(self) -> None:
        super().__init__(add_help=False)
        self.connection = _part(
            ("--url", dict(metavar="URL", help="the log: sqlite:///path.db, "
                           "postgresql://user@host/db, file:///dir (default: $EVENTLOG_URL, "
                           "else sqlite:///eventlog.db)")),
            ("--schema", dict(metavar="NAME", help="the PostgreSQL schema (default: the "
                              "URL's ?schema=, else $EVENTLOG_SCHEMA, else eventlog)")),
            ("--distributed", dict(action="store_true", help="the PostgreSQL log is on a "
                                   "Citus coordinator, its tables distributed by tenant")),
            ("--keyring", dict(metavar="FILE", help="the keyring of an encrypted log "
                               "(default: $EVENTLOG_KEYRING)")),
            ("--writer-key", dict(metavar="FILE", action="append", help="a writer public "
                                  "key (PEM or verifier key, as `eventlog keys public` "
                                  "writes): check the events' signatures against it without "
                                  "the keyring (repeatable; default: $EVENTLOG_WRITER_KEY)")),
        )
        self.replica = _part(("--read-url", dict(
            metavar="URL", help="a hot standby of the PostgreSQL log to read from "
            "(default: $EVENTLOG_READ_URL)")))
        self.output = _part(("--json", dict(action="store_true", help="print JSON for scripts")))
        self.acting = _part(("--actor", dict(
            metavar="NAME", help="who acts: the principal the events this command appends "
            "are recorded as appended by, covered by the hash chain (default: "
            "$EVENTLOG_ACTOR, else nobody named)")))
        self.debug = _part(("--debug", dict(
            action="store_true", help="show tracebacks and the library's debug logs")))

    def parents_for(self, command: str) -> list[argparse.ArgumentParser]:
        """The parts of the shared options that act on ``command``."""
        if command in NO_LOG:
            return [self.debug]
        if command in AUDITORS:
            return [self.output, self.debug]
        acting = [self.acting] if command in ACTING else []
        if command in WRITERS:
            return [self.connection, *acting, self.output, self.debug]
        return [self.connection, self.replica, self.output, self.debug]


def _part(*options: tuple[str, dict[str, Any]]) -> argparse.ArgumentParser:
    part = argparse.ArgumentParser(add_help=False)
    group = part.add_argument_group("shared options")  # argparse merges same-named groups
    for flag, settings in options:
        group.add_argument(flag, **settings)
    return part


def lazy_handler(target: str) -> Handler:
    """The handler ``"MODULE:FUNCTION"`` names (a module under `eventlog.cli`), imported
    when the command runs: a command's parser is declared in `eventlog.cli.parsers`
    without its module, so ``eventlog CMD --help`` imports nothing the command runs."""
    module, _, function = target.partition(":")

    async def run(context: Context) -> int:
        import importlib

        found: Handler = getattr(importlib.import_module(f"eventlog.cli.{module}"), function)
        return await found(context)

    run.__qualname__ = run.__name__ = target
    return run


def add_command(
    commands: Any, common: argparse.ArgumentParser, name: str, summary: str,
    handler: Handler | str, description: str | None = None,
) -> argparse.ArgumentParser:
    """Add one command with the shared options that act on it, its examples
    (`eventlog.cli.examples`), the exit statuses and its handler (``"MODULE:FUNCTION"``:
    `lazy_handler`)."""
    parents = common.parents_for(name) if isinstance(common, SharedOptions) else [common]
    parser: argparse.ArgumentParser = commands.add_parser(
        name, parents=parents, help=summary, description=description or summary,
        epilog=examples_help(name) + EXIT_STATUSES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=lazy_handler(handler) if isinstance(handler, str) else handler)
    return parser
