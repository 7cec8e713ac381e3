"""The command line of ``keys`` and ``erase``, declared without `eventlog.cli.keys`
(imported when the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``keys`` (``init``, ``rotate``) and ``erase``."""
    keys = add_command(
        commands, common, "keys", "make a keyring, or rotate a log's keys to a new one",
        "keys:run_keys",
        description="`keys init FILE` writes a new keyring (a random 256-bit KEK, mode "
        "0600; an existing file is refused). `keys rotate --keyring OLD --to NEW` re-wraps "
        "every data key of the log under NEW's KEK in one pass; a pass killed midway is "
        "simply run again. Afterwards OLD is no longer needed.",
    )
    keys.add_argument("action", choices=("init", "rotate"), help="what to do")
    keys.add_argument("file", nargs="?", metavar="FILE", help="init: the keyring to write")
    keys.add_argument("--to", metavar="FILE", help="rotate: the new keyring")
    keys.add_argument("--page", type=positive_int, default=200, metavar="N",
                      help="rotate: keys re-wrapped per statement (default 200)")
    erase = add_command(
        commands, common, "erase", "erase a subject: destroy its data key, record why",
        "keys:run_erase",
        description="Destroy every data key of SUBJECT (a session id, a thread id, or the "
        "subject= an application named) in TENANT, and append an erasure event naming "
        "who and why. Its states and free-text fields can never be read again; its "
        "records still list, and verify holds. Needs no keyring. A subject that holds no "
        "data key (misspelled, never written under a keyring, a log that is not "
        "encrypted) is an error, exit status 4, unless --if-present; one erased before "
        "is not (exit 0).",
    )
    erase.add_argument("tenant", metavar="TENANT", help="the tenant the subject is in")
    erase.add_argument("subject", metavar="SUBJECT",
                       help="the subject: a session or thread id, or a named subject=")
    erase.add_argument("--reason", default="", metavar="TEXT", help="why (recorded)")
    erase.add_argument("--actor", metavar="WHO", help="who asked (default: the OS user)")
    erase.add_argument("--if-present", action="store_true",
                       help="a subject that holds no data key is no error (exit 0)")
