"""Exit statuses, and how every failure becomes one line and one of them.

`EXIT_STATUSES` is the one table of what each status means: ``eventlog --help`` prints
it, the guide's table (docs/cli.md) is held to it (tests/cli/test_exit_statuses.py), and `classify`
gives every error the status its kind means. A command returns one of the ``EXIT_*``
names, never a number of its own.
"""

from __future__ import annotations

import textwrap

from eventlog.errors import (
    BlobMissing,
    ConsumerTampered,
    CorruptBlob,
    CorruptEvent,
    DigestRefused,
    EventLogError,
    ForgedEvent,
    ImportRefused,
    InvalidInput,
    InvalidURL,
    KeyringRequired,
    KeyUnavailable,
    LogNotEncrypted,
    SchemaError,
    SealRefused,
    StateDecodeError,
    StorageError,
    StoreLocked,
    SubjectErased,
    TreeDamaged,
    TreeRebuildRefused,
    UnknownEventType,
)

EXIT_OK = 0
"""The command did what was asked and found nothing wrong."""
EXIT_FINDINGS = 1
"""The command ran its check and the answer is no: ``verify`` found a broken chain or
view row, a signature, proof or cosignature does not hold, the witness refused a fork or
a rollback, ``import`` refused a conflicting history, a tree rebuild was refused."""
EXIT_USAGE = 2
"""Bad usage or bad input: an unknown option, a malformed URL or time, a file that is
not what it should be, a private key where a public one belongs, an unknown tenant,
session or batch, a keyring that is missing or cannot open the data."""
EXIT_OPERATIONAL = 3
"""The storage could not be reached or used (no such database, connection refused,
schema too old or too new, store locked, the witness's state not writable, an export
that could not read every event in time)."""
EXIT_NOTHING = 4
"""The command found nothing to act on where something was asked: ``erase`` of a subject
that holds no data key (misspelled, never written under a keyring, or a log that is not
encrypted), so whatever personal data there is stays. ``erase --if-present`` makes it 0."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (SIGINT), as shells report it."""

EXIT_STATUSES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "ok", "done; every check held"),
    (EXIT_FINDINGS, "findings",
     "a check ran and failed: verify found a problem; a signature, proof or cosignature "
     "does not hold; the witness refused a fork or rollback; import refused a "
     "conflicting history; a tree rebuild was refused; the stored tree is damaged; a "
     "decision refused an event the writer key did not sign"),
    (EXIT_USAGE, "usage",
     "usage or bad input: bad option, URL or time; a file that cannot be read or is not "
     "what it should be (a private key where a public one belongs); unknown tenant, "
     "session or batch; a keyring missing, not the log's, or unable to open the data"),
    (EXIT_OPERATIONAL, "operational",
     "storage unreachable or unusable: no such database, connection refused, schema too "
     "old or too new, store locked, witness state not writable, export cut short"),
    (EXIT_NOTHING, "nothing",
     "nothing to act on: erase found no data key of the subject (--if-present: 0)"),
    (EXIT_INTERRUPTED, "interrupted", "stopped by Ctrl-C"),
)
"""Every exit status: (status, kind, what it means), in order."""

KINDS = {status: kind for status, kind, _meaning in EXIT_STATUSES}
"""Each status's one-word kind, as ``--json`` errors name it."""

_STATUS_OF: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    ((DigestRefused, SealRefused, CorruptEvent, CorruptBlob, BlobMissing, StateDecodeError,
      TreeRebuildRefused, TreeDamaged, ImportRefused, ForgedEvent, ConsumerTampered),
     EXIT_FINDINGS),
    ((InvalidURL, InvalidInput, KeyringRequired, KeyUnavailable, SubjectErased,
      LogNotEncrypted), EXIT_USAGE),
    ((StoreLocked, SchemaError, StorageError, UnknownEventType, OSError), EXIT_OPERATIONAL),
)
"""Which status an error of the library means, first match wins (`DigestRefused` is an
`InvalidInput` too: a digest that does not hold is a finding, not bad input)."""

EXIT_STATUSES_HELP = "exit statuses:\n" + "".join(
    textwrap.fill(f"{status:<3}  {kind}: {meaning}", 88, initial_indent="  ",
                  subsequent_indent="       ") + "\n"
    for status, kind, meaning in EXIT_STATUSES) + """
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
    for kinds, status in _STATUS_OF:
        if isinstance(error, kinds):
            said = str(error) if isinstance(error, EventLogError) else \
                f"{type(error).__name__}: {error}"
            return status, one_line(said)
    if isinstance(error, EventLogError):
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
