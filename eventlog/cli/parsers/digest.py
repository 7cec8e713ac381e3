"""The command line of ``digest``, declared without `eventlog.cli.digest` (imported when
the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``digest``."""
    parser = add_command(
        commands, common, "digest", "write every stream's head and one digest over them",
        "digest:run",
        description="Verify the log, then write the current head (version and hash) of "
        "every stream, and one SHA-256 digest over them, as a small JSON document. Keep it "
        "outside the database (append-only storage, a ticket, a signed email): later, "
        "`eventlog verify --digest FILE` proves the log still holds every stream up to "
        "those heads and names each stream that was cut, dropped or rewritten, even by "
        "someone who rewrote the events and the head rows together. With --key, the "
        "digest is signed with the operator's Ed25519 private key, so that `verify "
        "--digest FILE --key PUBLIC_KEY` also proves who wrote it (an unsigned digest "
        "proves only that the log matches the file). Make a key pair with `openssl genpkey "
        "-algorithm ed25519 -out digest-key.pem` and `openssl pkey -in digest-key.pem "
        "-pubout -out digest-key.pub.pem`.",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's streams")
    parser.add_argument("--key", metavar="PRIVATE_KEY_FILE",
                        help="sign the digest with this Ed25519 private key (PEM)")
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help="write the digest to FILE (default: standard output)")
