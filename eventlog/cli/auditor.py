"""The auditor's commands: ``check-proof``, ``witness`` and ``verifier-key``. They open no
log, whatever ``EVENTLOG_URL`` says, and import nothing that could (no storage, no
driver, not the log): what they run is `eventlog.proofs` and `eventlog.notes`, pure code
over the files they are handed (tests/test_startup.py holds them to it).

The operator's side (``tree-head``, ``prove``, ``tree-rebuild``) is
`eventlog.cli.transparency`.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventlog.cli.console import print_plain_json
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, EXIT_OPERATIONAL, CommandError
from eventlog.cli.files import STDOUT, read_bounded, read_text, write_output
from eventlog.cli.keyfiles import read_verifier, read_witness_keys

if TYPE_CHECKING:
    from eventlog.notes import Checkpoint
    from eventlog.signing import Ed25519PrivateKey

MAX_FILE = 4 * 1024 * 1024
"""The largest head or proof file read: a proof is a few kilobytes plus its event."""


async def run_check(context: Context) -> int:
    """Check the proof; 0 holds, 1 fails, 2 unreadable input."""
    from eventlog.proofs import (
        INCLUSION,
        ProofFailed,
        check_consistency,
        check_inclusion,
        check_writer_signature,
        decode_document,
        open_head,
        require_cosignatures,
    )

    args = context.args
    document = decode_document(read_bounded(args.proof, "proof", MAX_FILE), f"proof {args.proof}")
    verifier = read_verifier(args.key)
    witnesses = read_witness_keys(args.witness_key)
    writers = _writer_keys(args.writer_key)
    signed: str | None = None
    try:
        head = open_head(read_text(args.head, "head", MAX_FILE), verifier.key,
                         f"head {args.head}", verifier.name)
        cosigned = require_cosignatures(head, witnesses, f"head {args.head}")
        if document["type"] == INCLUSION:
            said = check_inclusion(document, head)
            if writers is not None:
                signed = check_writer_signature(document, writers)
        else:
            said = check_consistency(document, head, verifier.key, verifier.name)
    except ProofFailed as failed:
        return refused(context, str(failed))
    witnessed = [{"witness": label, "name": c.name, "time": _utc(c.timestamp)}
                 for (label, _), c in zip(witnesses, cosigned, strict=True)]
    if context.json:
        print_plain_json({"holds": True, "proved": said, "cosigned": witnessed,
                          "writer_signature": signed})
    else:
        context.out.print(f"holds: {said}")
        if signed is not None:
            context.out.print(f"  the event is the application's: {signed}")
        elif document["type"] == INCLUSION:
            context.out.print("  notice: the event's writer signature was not checked "
                              "(--writer-key FILE: the writer's public key, from `eventlog "
                              "keys public`)")
        for seen in witnessed:
            context.out.print(f"  cosigned by witness {seen['name']} at {seen['time']}")
    return EXIT_OK


def _writer_keys(files: list[str]) -> Any:
    """The writer public keys in the ``--writer-key`` files (None: none given)."""
    if not files:
        return None
    from eventlog.writer_keys import WriterKeys, parse_writer_keys

    return WriterKeys([key for file in files
                       for key in parse_writer_keys(read_text(file, "writer key", MAX_FILE),
                                                    f"writer key {file}")])


def _utc(timestamp: int) -> str:
    from datetime import UTC, datetime

    from eventlog.cli.options import utc_text

    try:
        return utc_text(datetime.fromtimestamp(timestamp, UTC))
    except (OverflowError, OSError, ValueError):
        return f"POSIX time {timestamp}"


async def run_witness(context: Context) -> int:
    """Accept the new head if it extends the kept one; refuse a fork or a rollback."""
    from eventlog.notes import parse_checkpoint, parse_note
    from eventlog.proofs import (
        CONSISTENCY,
        ProofFailed,
        decode_document,
        open_head,
        witness_decision,
    )

    args = context.args
    verifier = read_verifier(args.key)
    cosigner = _cosigner(args)
    state = Path(args.state)
    try:
        new = open_head(read_text(args.head, "head", MAX_FILE), verifier.key,
                        f"head {args.head}", verifier.name)
    except ProofFailed as failed:
        return refused(context, str(failed))
    kept_file = state / (hashlib.sha256(new.checkpoint.origin.encode()).hexdigest() + ".head")
    kept = (parse_checkpoint(parse_note(read_text(str(kept_file), "kept head", MAX_FILE)).text)
            if kept_file.exists() else None)
    proof: list[bytes] | None = None
    if args.proof is not None:
        document = decode_document(read_bounded(args.proof, "proof", MAX_FILE),
                                   f"proof {args.proof}")
        if document["type"] != CONSISTENCY:
            raise CommandError(f"{args.proof} is not a consistency proof")
        proof = _proof_between(document, kept, new.checkpoint)
    try:
        said = witness_decision(kept, new.checkpoint, proof)
    except ProofFailed as failed:
        return refused(context, str(failed))
    if kept is None or kept.size != new.checkpoint.size:
        _keep(state, kept_file, new.note)
    cosigned = None
    if cosigner is not None:
        import time

        from eventlog.notes import cosign_note

        cosigned = cosign_note(new.note, cosigner[0], cosigner[1], int(time.time()))
        if args.output != STDOUT or not context.json:
            write_output(args.output, cosigned.encode())
    if context.json:
        print_plain_json({"accepted": True, "said": said, "cosigned_head": cosigned})
    else:
        # The cosigned head may be standard output: then the verdict goes to stderr.
        shown = context.err if cosigned is not None and args.output == STDOUT else context.out
        shown.print(f"accepted: {said}" + (f"; cosigned by {cosigner[0]}" if cosigner else ""))
    return EXIT_OK


def _cosigner(args: argparse.Namespace) -> tuple[str, Ed25519PrivateKey] | None:
    """The witness's own (name, private key), from --witness-key and --name; None without."""
    from eventlog.cli.keyfiles import read_private_key_file
    from eventlog.notes import check_name

    if args.witness_key is None:
        if args.name is not None or args.output != STDOUT:
            raise CommandError("--name and --output are for cosigning: give --witness-key, "
                               "the witness's own private key")
        return None
    if args.name is None:
        raise CommandError("--witness-key needs --name: the witness's key name")
    return check_name(args.name, "--name"), read_private_key_file(args.witness_key)


def _proof_between(document: dict[str, Any], kept: Checkpoint | None,
                   new: Checkpoint) -> list[bytes] | None:
    from eventlog.proofs import decode_hashes

    if kept is None:
        return None
    if (document.get("old_size"), document.get("new_size")) != (kept.size, new.size):
        raise CommandError(f"the proof is from size {document.get('old_size')} to "
                           f"{document.get('new_size')}; the witness needs one from the kept "
                           f"{kept.size} to the new {new.size}")
    return decode_hashes(document, "proof")


def _keep(state: Path, file: Path, note: str) -> None:
    try:
        state.mkdir(parents=True, exist_ok=True)
        partial = file.with_name(file.name + ".partial")
        partial.write_text(note, encoding="utf-8")
        partial.replace(file)
    except OSError as error:
        raise CommandError(f"cannot write the witness state {file}: "
                           f"{error.strerror or error}", EXIT_OPERATIONAL) from error


def refused(context: Context, reason: str) -> int:
    """Say why a head or a proof does not hold (stderr, or JSON); exit status 1."""
    if context.json:
        print_plain_json({"holds": False, "reason": reason})
    else:
        context.err.print(f"refused: {reason}")
    return EXIT_FINDINGS


async def run_verifier_key(context: Context) -> int:
    """Print the verifier key of a tenant's heads: ``origin+hash+base64``."""
    from eventlog.notes import check_name, origin_for, verifier_key
    from eventlog.signing import load_public_key

    args = context.args
    # Either key of the pair gives the public key, and nothing secret is printed.
    key = load_public_key(read_bounded(args.key, "key file", 64 * 1024), f"key file {args.key}")
    origin = origin_for(check_name(args.name, "--name"), args.tenant)
    verifier = verifier_key(origin, key)
    if context.json:
        print_plain_json({"tenant_id": args.tenant, "origin": origin, "key_name": origin,
                          "verifier_key": verifier})
    else:
        context.out.print(verifier)
    return EXIT_OK
