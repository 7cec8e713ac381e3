"""The command line of ``tree-head``, ``prove``, ``check-proof`` and ``witness``, declared
without `eventlog.cli.transparency` (imported when the command runs: its handlers are
named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``tree-head``, ``prove``, ``check-proof`` and ``witness``."""
    head = add_command(
        commands, common, "tree-head", "sign the head of a tenant's transparency tree",
        "transparency:run_head",
        description="Extend the tenant's RFC 9162 Merkle tree over every event readable now "
        "and write its head (size and root) as a C2SP signed note (tlog-checkpoint), signed "
        "with the operator's Ed25519 private key under NAME; its origin is NAME/TENANT. "
        "Give heads to auditors: `eventlog prove` proves an event is under one, "
        "`eventlog check-proof` checks that without the database, `eventlog witness` keeps "
        "the newest and refuses a fork or a rollback.")
    head.add_argument("tenant", metavar="TENANT", help="the tenant whose tree to sign")
    head.add_argument("--key", metavar="PRIVATE_KEY_FILE", required=True,
                      help="the Ed25519 private key (PEM) to sign the head with")
    head.add_argument("--name", metavar="NAME", required=True,
                      help="the key's (and log's) name, e.g. example.org/eventlog: no spaces")
    _output(head, "the signed head")

    prove = add_command(
        commands, common, "prove", "prove an event is under a signed head, or two heads agree",
        "transparency:run_prove",
        description="With EVENT_ID: write the inclusion proof of the tenant's event under the "
        "tree head in --head (the event's envelope and hash, its leaf index, the tree size "
        "and the path). With --from OLD_HEAD: write the consistency proof that the tree of "
        "OLD_HEAD is a prefix of the tree of --head. Both are small JSON documents that "
        "`eventlog check-proof` checks with no database.")
    prove.add_argument("tenant", metavar="TENANT", help="the tenant the head is of")
    prove.add_argument("event_id", metavar="EVENT_ID", nargs="?",
                       help="the event to prove is under the head (omit with --from)")
    prove.add_argument("--head", metavar="FILE", required=True, help="a signed tree head")
    prove.add_argument("--from", dest="old_head", metavar="OLD_HEAD",
                       help="an older signed head: write a consistency proof from it")
    _output(prove, "the proof")

    check = add_command(
        commands, common, "check-proof", "check a proof against a signed head, with no database",
        "transparency:run_check",
        description="Check an inclusion or consistency proof written by `eventlog prove` "
        "against a signed tree head and the operator's public key. Opens no log at all. "
        "Exit status 0 if it holds, 1 if it does not, 2 for unreadable input.")
    check.add_argument("proof", metavar="PROOF", help="a proof file from `eventlog prove`")
    check.add_argument("--head", metavar="FILE", required=True, help="the signed tree head")
    check.add_argument("--key", metavar="PUBLIC_KEY_FILE", required=True,
                       help="the operator's Ed25519 public key (PEM)")

    witness = add_command(
        commands, common, "witness", "keep the newest head of each log; refuse forks and "
        "rollbacks", "transparency:run_witness",
        description="A minimal witness (C2SP tlog-witness): keeps, in --state DIR, the newest "
        "signed head it accepted for each origin. A new head is accepted only if its "
        "signature holds and, when it is larger, --proof gives a consistency proof from the "
        "kept head (`eventlog prove TENANT --from KEPT --head NEW`). A smaller head (a "
        "rollback) or one that does not extend the kept one (a fork) is refused, naming "
        "both sizes. Opens no log.")
    witness.add_argument("--head", metavar="FILE", required=True, help="the new signed head")
    witness.add_argument("--state", metavar="DIR", required=True,
                         help="where the witness keeps the heads it accepted")
    witness.add_argument("--key", metavar="PUBLIC_KEY_FILE", required=True,
                         help="the operator's Ed25519 public key (PEM)")
    witness.add_argument("--proof", metavar="FILE",
                         help="the consistency proof from the kept head to the new one")


def _output(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help=f"write {what} to FILE (default: standard output)")
