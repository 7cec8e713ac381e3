"""Exit statuses, and how every failure becomes one line and one of them."""

from __future__ import annotations

from eventlog.errors import (
    EventLogError,
    ForgedEvent,
    InvalidInput,
    InvalidURL,
    SchemaError,
    StorageError,
    StoreLocked,
    UnknownEventType,
)

EXIT_OK = 0
"""The command did what was asked and found nothing wrong."""
EXIT_FINDINGS = 1
"""The command ran and found a problem (``verify`` found a broken chain or view row,
``import`` refused a file whose history conflicts with the target's)."""
EXIT_USAGE = 2
"""Bad usage or bad input: an unknown option, a malformed URL, time or file, an unknown
tenant, session or batch."""
EXIT_OPERATIONAL = 3
"""The storage could not be reached or used (no such database, connection refused,
schema too old or too new, store locked), or another operational error."""
EXIT_NOTHING = 4
"""The command found nothing to act on where something was asked: ``erase`` of a subject
that holds no data key (misspelled, never written under a keyring, or a log that is not
encrypted), so whatever personal data there is stays. ``erase --if-present`` makes it 0."""

EXIT_STATUSES_HELP = f"""\
exit statuses:
  {EXIT_OK}  ok
  {EXIT_FINDINGS}  findings: verify found a problem, import refused a conflicting history,
     a decision refused an event the writer key did not sign
  {EXIT_USAGE}  usage or bad input: bad option, URL, time or file; unknown tenant/session/batch
  {EXIT_OPERATIONAL}  storage unreachable or unusable, or another operational error
  {EXIT_NOTHING}  nothing to act on: erase found no data key of the subject (--if-present: 0)

environment:
  EVENTLOG_URL     the log URL when --url is not given (default sqlite:///eventlog.db)
  EVENTLOG_SCHEMA  the PostgreSQL schema when --schema is not given (default eventlog)
  EVENTLOG_READ_URL  a hot standby to read from when --read-url is not given
"""

_MAX_MESSAGE = 400


class CommandError(Exception):
    """A failure a command reports as one line, with the exit status it means."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        self.message = message
        self.status = status
        super().__init__(message)


def classify(error: BaseException) -> tuple[int, str]:
    """The exit status and the one-line message for ``error``."""
    if isinstance(error, CommandError):
        return error.status, one_line(error.message)
    if isinstance(error, ForgedEvent):  # the log was written behind the application
        return EXIT_FINDINGS, one_line(str(error))
    if isinstance(error, InvalidURL | InvalidInput):
        return EXIT_USAGE, one_line(str(error))
    if isinstance(error, StoreLocked | SchemaError | StorageError | UnknownEventType):
        return EXIT_OPERATIONAL, one_line(str(error))
    if isinstance(error, EventLogError | OSError):
        return EXIT_OPERATIONAL, one_line(f"{type(error).__name__}: {error}")
    return EXIT_OPERATIONAL, one_line(
        f"unexpected {type(error).__name__}: {error} (rerun with --debug for the traceback)"
    )


def one_line(message: str) -> str:
    """``message`` with its whitespace collapsed to single spaces, cut to a readable length."""
    collapsed = " ".join(message.split())
    if len(collapsed) > _MAX_MESSAGE:
        return collapsed[: _MAX_MESSAGE - 1] + "…"
    return collapsed
