"""The command line of ``tree-head``, ``prove``, ``check-proof``, ``witness``,
``verifier-key`` and ``tree-rebuild``, declared without `eventlog.cli.transparency` and
`eventlog.cli.auditor` (imported when the command runs: its handlers are named
``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``tree-head``, ``prove``, ``check-proof``, ``witness``, ``verifier-key`` and
    ``tree-rebuild``."""
    head = add_command(
        commands, common, "tree-head", "sign the head of a tenant's transparency tree",
        "transparency:run_head",
        description="Extend the tenant's RFC 9162 Merkle tree over every event readable now "
        "and write its head (size and root) as a C2SP signed note (tlog-checkpoint), signed "
        "with the operator's Ed25519 private key once the stored tree is checked against "
        "the events (a stored tree they do not give, such as more leaves than events, is "
        "refused with exit status 1). Its origin is NAME/TENANT (the tenant id "
        "percent-encoded, so any id gives a valid origin), and so is its key name, as the "
        "spec recommends; `eventlog verifier-key` prints the verifier key other tlog tools "
        "(Go's note.Open) check it with. An unknown tenant is refused. "
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
        "auditor:run_check",
        description="Check an inclusion or consistency proof written by `eventlog prove` "
        "against a signed tree head and the operator's public key; with --writer-key, also "
        "that the event is the application's (its writer signature holds), which a head "
        "alone cannot tell: the tree takes in every row of the log. Opens no log at all. "
        "Exit status 0 if it holds, 1 if it does not (or a signature does not), 2 for "
        "unreadable input or a private key given as --key.")
    check.add_argument("proof", metavar="PROOF", help="a proof file from `eventlog prove`")
    check.add_argument("--head", metavar="FILE", required=True, help="the signed tree head")
    _public_key(check)
    check.add_argument("--writer-key", metavar="FILE", action="append", default=[],
                       help="the application's writer public key (PEM or verifier key, as "
                            "`eventlog keys public` writes; repeatable): an inclusion "
                            "proof's event must carry its signature, else the proof is "
                            "refused as forged or unsigned (exit 1)")
    witness_keys(check)

    witness = add_command(
        commands, common, "witness", "keep the newest head of each log; refuse forks and "
        "rollbacks", "auditor:run_witness",
        description="An offline witness: a cosigner run on the files it is handed (by hand, "
        "from cron or a CI job), not a server; it does not speak the HTTP protocol of C2SP "
        "tlog-witness (add-checkpoint). It keeps, in --state DIR, the newest signed head "
        "(C2SP tlog-checkpoint) it accepted for each origin. A new head is accepted only if "
        "its signature holds and, when it is larger, --proof gives a consistency proof from "
        "the kept head (`eventlog prove TENANT --from KEPT --head NEW`). A smaller head (a "
        "rollback) or one that does not extend the kept one (a fork) is refused, naming "
        "both sizes. With --witness-key and --name it cosigns what it accepts (C2SP "
        "tlog-cosignature): the head with its cosignature line, which `check-proof` and "
        "`verify` can require with --witness-key. Opens no log.")
    witness.add_argument("--head", metavar="FILE", required=True, help="the new signed head")
    witness.add_argument("--state", metavar="DIR", required=True,
                         help="where the witness keeps the heads it accepted")
    _public_key(witness)
    witness.add_argument("--proof", metavar="FILE",
                         help="the consistency proof from the kept head to the new one")
    witness.add_argument("--witness-key", metavar="PRIVATE_KEY_FILE",
                         help="the witness's own Ed25519 private key (PEM): cosign the head "
                              "it accepts (C2SP tlog-cosignature, cosignature/v1) and write "
                              "it, with its cosignature line added, to --output")
    witness.add_argument("--name", metavar="NAME",
                         help="the witness's key name, e.g. witness.example.org/w1 (needed "
                              "with --witness-key)")
    _output(witness, "the cosigned head (with --witness-key)")

    verifier = add_command(
        commands, common, "verifier-key", "print the verifier key tlog tools check heads with",
        "auditor:run_verifier_key",
        description="Print the verifier key of the heads `eventlog tree-head TENANT --name "
        "NAME` signs: ORIGIN+HASH+BASE64, the key's name (the head's origin), its key ID "
        "in hex and base64(0x01 || the Ed25519 public key), the form Go's "
        "golang.org/x/mod/sumdb/note (note.NewVerifier, note.Open) and other tlog tools are "
        "configured with, and that --key of check-proof, witness and verify also takes. "
        "Opens no log.")
    verifier.add_argument("tenant", metavar="TENANT", help="the tenant whose heads it checks")
    verifier.add_argument("--key", metavar="KEY_FILE", required=True,
                          help="the operator's Ed25519 public key (PEM; the private key's "
                               "file gives the same answer)")
    verifier.add_argument("--name", metavar="NAME", required=True,
                          help="the log's name, as given to tree-head --name")

    rebuild = add_command(
        commands, common, "tree-rebuild", "rebuild a tenant's damaged tree from its events",
        "transparency:run_rebuild",
        description="Replace the tenant's stored tree (derived data, like a view) with the "
        "tree its events give, in one transaction: the repair when `eventlog verify --head` "
        "finds a stored node that is not the hash of its events. It cannot launder a "
        "rewrite: every --head given must still be the root of the tenant's first SIZE "
        "events, or nothing is written and the cut or rewrite is named (exit status 1). "
        "Without a head the stored tree is the evidence: a rebuild that would replace its "
        "leaves with other events (cut, or rewritten and re-chained since they were "
        "integrated) is refused the same way, unless --accept-new-root; so is one where "
        "stored leaves past every --head are gone and no stored root the events give "
        "vouches for them (a deleted tree is no evidence).")
    rebuild.add_argument("tenant", metavar="TENANT", help="the tenant whose tree to rebuild")
    rebuild.add_argument("--head", metavar="FILE", action="append", default=[],
                         help="a signed tree head that was kept (repeatable): the rebuilt "
                              "tree must still give its root")
    rebuild.add_argument("--key", metavar="PUBLIC_KEY_FILE",
                         help="the operator's Ed25519 public key (PEM) that signed the heads "
                              "(needed with --head)")
    rebuild.add_argument("--accept-new-root", action="store_true",
                         help="rebuild even where the stored tree holds other leaves than "
                              "the events, or none left to check them against (never past "
                              "a --head): heads signed before may no "
                              "longer be provable, and witnesses will see a fork")


def witness_keys(parser: argparse.ArgumentParser) -> None:
    """Add ``--witness-key PUBLIC_KEY_FILE`` (repeatable) to a command that checks heads."""
    parser.add_argument("--witness-key", metavar="PUBLIC_KEY_FILE", action="append",
                        default=[], help="require the head to carry a valid cosignature "
                        "(C2SP cosignature/v1) of this witness's Ed25519 public key (PEM); "
                        "repeatable: every witness given must have cosigned it")


def _public_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", metavar="PUBLIC_KEY_FILE", required=True,
                        help="the operator's Ed25519 public key: PEM, or a verifier key "
                             "file (NAME+HASH+BASE64, `eventlog verifier-key`)")


def _output(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help=f"write {what} to FILE (default: standard output)")
