"""The command line of ``verify``, declared without `eventlog.cli.verify` (imported when
the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``verify``."""
    parser = add_command(
        commands, common, "verify", "check every hash chain and every view against the log",
        "verify:run",
        description="Recompute every stream's SHA-256 hash chain from the stored bytes "
        "(naming the first broken link of each stream) and compare every stored view row "
        "with a rebuild from the log (naming each differing row). Exit status 1 on any "
        "finding.",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's chains and rows")
    parser.add_argument("--max-rows", type=positive_int, default=20, metavar="N",
                        help="show at most N differing view rows (20); all are counted")
    parser.add_argument("--digest", metavar="FILE",
                        help="also prove the log still holds every stream up to the heads "
                             "of a digest written earlier by `eventlog digest`")
    parser.add_argument("--key", metavar="PUBLIC_KEY_FILE",
                        help="with --digest: first check the digest's signature with this "
                             "Ed25519 public key (PEM); an unsigned digest, one another key "
                             "signed, or one changed after it was signed is refused; with "
                             "--head: the head's signature")
    parser.add_argument("--head", metavar="FILE",
                        help="also prove the log still gives the signed tree head in FILE "
                             "(`eventlog tree-head`): its tenant's first SIZE events give "
                             "its root; names a cut or a rewrite (needs --key)")
    parser.add_argument("--witness-key", metavar="PUBLIC_KEY_FILE", action="append",
                        default=[], help="with --head: require the head to carry a valid "
                        "cosignature (C2SP cosignature/v1) of this witness's Ed25519 public "
                        "key (PEM), as `eventlog witness --witness-key` writes; repeatable")
