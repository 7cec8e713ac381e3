"""The command line of ``keys`` and ``erase``, declared without `eventlog.cli.keys`
(imported when the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``keys`` (``init``, ``rotate``, ``init-writer``, ``rotate-writer``, ``public``)
    and ``erase``."""
    keys = add_command(
        commands, common, "keys", "make a keyring, rotate its keys, print its public key",
        "keys:run_keys",
        description="`keys init FILE` writes a new keyring (a random 256-bit KEK and an "
        "Ed25519 writer key that signs every append, mode 0600; an existing file is "
        "refused). `keys rotate --keyring OLD --to NEW` re-wraps every data key of the log "
        "under NEW's KEK in one pass; a pass killed midway is simply run again. Afterwards "
        "OLD is no longer needed. `keys init-writer FILE` gives a keyring made before "
        "writer keys its writer key (the log is signed from its next append); `keys "
        "rotate-writer FILE` replaces it, keeping the old public key so the events it "
        "signed still check. `keys public FILE` prints what an auditor needs: each writer "
        "public key as PEM and as a C2SP signed-note verifier key (for verify "
        "--writer-key, check-proof --writer-key); no secret.",
    )
    keys.add_argument("action", choices=("init", "rotate", "init-writer", "rotate-writer",
                                         "public"), help="what to do")
    keys.add_argument("file", nargs="?", metavar="FILE",
                      help="the keyring file (init: the one to write; the others: default "
                           "--keyring or $EVENTLOG_KEYRING)")
    keys.add_argument("--name", default="eventlog-writer", metavar="NAME",
                      help="public: the key name its verifier key carries (no spaces or "
                           "'+'; default eventlog-writer)")
    keys.add_argument("-o", "--output", default="-", metavar="FILE",
                      help="public: write the public keys to FILE (default: standard output)")
    keys.add_argument("--to", metavar="FILE", help="rotate: the new keyring")
    keys.add_argument("--page", type=positive_int, default=200, metavar="N",
                      help="rotate: keys re-wrapped per statement (default 200)")
    erase = add_command(
        commands, common, "erase", "erase a subject: destroy its data key, record why",
        "keys:run_erase",
        description="Destroy every data key of SUBJECT (a session id, a thread id, or the "
        "subject= an application named) in TENANT, and append an erasure event naming "
        "who and why. Its states and free-text fields can never be read again; its "
        "records still list, and verify holds. Needs the keyring when the tenant's events "
        "are signed (its writer key signs the erasure record), none otherwise. A subject "
        "that holds no "
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
