"""The transparency log's commands: ``tree-head``, ``prove`` and ``tree-rebuild`` (the
operator's, on the log), ``check-proof`` and ``witness`` (the auditor's: no database at
all, whatever ``EVENTLOG_URL`` says). ``verify --head`` lives with verify.

The documents and checks are `eventlog.proofs`; keys are read as ``digest`` reads them.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, CommandError
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.render import plural
from eventlog.errors import InvalidInput

if TYPE_CHECKING:
    from eventlog.proofs import SignedHead
    from eventlog.signing import Ed25519PublicKey

_MAX_FILE = 4 * 1024 * 1024
"""The largest head or proof file read: a proof is a few kilobytes plus its event."""


def read_witness_keys(files: list[str]) -> list[tuple[str, Ed25519PublicKey]]:
    """Each ``--witness-key`` file's public key, labelled by its file name."""
    from eventlog.cli.digest import read_public_key_file

    return [(file, read_public_key_file(file)) for file in files]


# -- the operator's side ------------------------------------------------------------------

async def run_head(context: Context) -> int:
    """Integrate, then sign and write the head."""
    from eventlog.cli.digest import read_private_key_file
    from eventlog.notes import Checkpoint, check_name, origin_for, sign_checkpoint

    args = context.args
    name = check_name(args.name, "--name")
    key = read_private_key_file(args.key)
    async with context.open() as log:
        await settle_or_warn(context, log)
        head = await log.tree_head(args.tenant)
    text = sign_checkpoint(Checkpoint(origin_for(name, args.tenant), head.size, head.root),
                           name, key)
    _write(context, args.output, text.encode())
    if args.output != "-":
        context.out.print(f"head of {plural(head.size, 'event')} of tenant {args.tenant!r} "
                          f"signed by {name}, written to {args.output}")
    return EXIT_OK


async def run_prove(context: Context) -> int:
    """Write an inclusion or a consistency proof under the given head."""
    from eventlog.proofs import consistency_document, inclusion_document

    args = context.args
    if (args.event_id is None) == (args.old_head is None):
        raise CommandError("give EVENT_ID (an inclusion proof) or --from OLD_HEAD (a "
                           "consistency proof), not both or neither")
    head = _head_for(args.head, args.tenant)
    old = _head_for(args.old_head, args.tenant) if args.old_head is not None else None
    event_id = _event_id(args.event_id) if args.event_id is not None else None
    document: dict[str, Any]
    async with context.open() as log:
        await _same_tree(log, head)
        if old is not None:
            await _same_tree(log, old)
            if old.checkpoint.size > head.checkpoint.size:
                raise CommandError(f"--from is a head of {plural(old.checkpoint.size, 'event')}, "
                                   f"larger than --head's {head.checkpoint.size}: swap them")
            hashes = await log.prove_consistency(args.tenant, old.checkpoint.size,
                                                 head.checkpoint.size)
            document = consistency_document(old, head, hashes)
        else:
            assert event_id is not None
            document = await _inclusion(log, args.tenant, event_id, head, inclusion_document)
    _write(context, args.output, (json.dumps(document, indent=2) + "\n").encode())
    return EXIT_OK


async def _inclusion(log: Any, tenant: str, event_id: uuid.UUID, head: Any,
                     make: Any) -> dict[str, Any]:
    proof = await log.prove_inclusion(tenant, event_id, head.checkpoint.size)
    event = await log.find_event(tenant, event_id) if proof is not None else None
    if proof is None or event is None:
        raise CommandError(f"tenant {tenant!r} has no event {event_id} in the tree this head "
                           f"signs ({plural(head.checkpoint.size, 'event')})")
    from eventlog.hashing import recompute_hash
    from eventlog.merkle import inclusion_holds, leaf_hash

    if recompute_hash(event) != event.hash or not inclusion_holds(
            leaf_hash(event.hash), proof.leaf_index, proof.size, proof.path,
            head.checkpoint.root):
        raise CommandError(f"event {event_id}, as the log holds it now, is not the leaf the "
                           "tree this head signs holds: the log was rewritten (see `eventlog "
                           "verify --head`)", EXIT_FINDINGS)
    document: dict[str, Any] = make(head, event, proof)
    return document


async def run_rebuild(context: Context) -> int:
    """Rebuild the tenant's tree; refused (status 1, nothing written) past a kept head."""
    from eventlog.cli.digest import read_public_key_file
    from eventlog.errors import TreeRebuildRefused
    from eventlog.merkle import TreeHead

    args = context.args
    if args.head and args.key is None:
        raise CommandError("--head needs --key: the operator's public key that signed it")
    heads = []
    if args.head:
        key = read_public_key_file(args.key)
        for file in args.head:
            signed = read_signed_head(file, key)
            if signed.tenant_id != args.tenant:
                raise CommandError(f"{file} is a head of tenant {signed.tenant_id!r}, not "
                                   f"{args.tenant!r}")
            heads.append(TreeHead(signed.checkpoint.size, signed.checkpoint.root))
    async with context.open() as log:
        await settle_or_warn(context, log)
        try:
            rebuilt = await log.rebuild_tree(args.tenant, heads,
                                             accept_new_root=args.accept_new_root)
        except TreeRebuildRefused as refused:
            hint = (" (--accept-new-root discards the stored tree as evidence)"
                    if refused.overridable else "")
            if context.json:
                context.print_json({"rebuilt": False, "problems": [
                    {"kind": kind, "detail": detail} for kind, detail in refused.findings],
                    "overridable": refused.overridable})
            else:
                context.err.print(f"refused: the tree of tenant {args.tenant!r} was not "
                                  f"rebuilt{hint}:")
                for _, detail in refused.findings:
                    context.err.print(f"  {detail}")
            return EXIT_FINDINGS
    root = base64.b64encode(rebuilt.root).decode()
    if context.json:
        context.print_json({
            "rebuilt": True, "tenant_id": args.tenant, "size": rebuilt.size, "root": root,
            "old_size": rebuilt.old_size, "repaired": rebuilt.repaired,
            "heads_held": len(heads),
            "discarded": [{"kind": f.kind, "detail": f.detail} for f in rebuilt.discarded]})
        return EXIT_OK
    for finding in rebuilt.discarded:
        context.err.print(f"warning: discarded as evidence: {finding.detail}")
    context.out.print(
        f"rebuilt the tree of tenant {args.tenant!r}: {plural(rebuilt.size, 'event')}, root "
        f"{root}; {plural(rebuilt.repaired, 'stored node')} of the old tree of "
        f"{plural(rebuilt.old_size, 'leaf', 'leaves')} repaired"
        + (f"; {plural(len(heads), 'kept head')} still {'holds' if len(heads) == 1 else 'hold'}"
           if heads else ""))
    return EXIT_OK


def read_signed_head(file: str, key: Ed25519PublicKey,
                     witnesses: list[tuple[str, Ed25519PublicKey]] | None = None) -> SignedHead:
    """The signed head in ``file``, its signature checked with ``key`` and, for each of
    ``witnesses``, its cosignature; a head without them is a finding (exit status 1)."""
    from eventlog.proofs import ProofFailed, open_head, require_cosignatures

    try:
        head = open_head(_read_text(file, "head"), key, f"head {file}")
        require_cosignatures(head, witnesses or [], f"head {file}")
    except ProofFailed as failed:
        raise CommandError(str(failed), EXIT_FINDINGS) from failed
    return head


def _head_for(file: str, tenant: str) -> Any:
    from eventlog.proofs import open_head

    head = open_head(_read_text(file, "head"), None, f"head {file}")
    if head.tenant_id != tenant:
        raise CommandError(f"{file} is a head of tenant {head.tenant_id!r}, not {tenant!r}")
    return head


async def _same_tree(log: Any, head: Any) -> None:
    """The head must be of this log's tree: the log's tree of its size has its root, which
    the log's current tree proves it extends (so the log was neither cut nor rewritten)."""
    from eventlog.merkle import TreeHead, consistency_holds

    size, root = head.checkpoint.size, head.checkpoint.root
    current = await log.tree_head(head.tenant_id)
    if current.size >= size:
        proof = await log.prove_consistency(head.tenant_id, size, current.size)
        if consistency_holds(size, current.size, root, current.root, proof):
            return
    findings = await log.check_tree(head.tenant_id, TreeHead(size, root))
    detail = findings[0].detail if findings else "its root is another"
    raise CommandError(f"the log's tree is not the tree this head signs: {detail} (see "
                       "`eventlog verify --head`)", EXIT_FINDINGS)


def _event_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise InvalidInput("EVENT_ID", f"must be a UUID, not {text!r}"[:200]) from None


# -- the auditor's side: no log is opened -------------------------------------------------

async def run_check(context: Context) -> int:
    """Check the proof; 0 holds, 1 fails, 2 unreadable input."""
    from eventlog.cli.digest import read_public_key_file
    from eventlog.proofs import (
        INCLUSION,
        ProofFailed,
        check_consistency,
        check_inclusion,
        decode_document,
        open_head,
        require_cosignatures,
    )

    args = context.args
    key = read_public_key_file(args.key)
    witnesses = read_witness_keys(args.witness_key)
    document = decode_document(_read_bytes(args.proof, "proof"), f"proof {args.proof}")
    try:
        head = open_head(_read_text(args.head, "head"), key, f"head {args.head}")
        cosigned = require_cosignatures(head, witnesses, f"head {args.head}")
        if document["type"] == INCLUSION:
            said = check_inclusion(document, head)
        else:
            said = check_consistency(document, head, key)
    except ProofFailed as failed:
        return _refused(context, str(failed))
    witnessed = [{"witness": label, "name": c.name, "time": _utc(c.timestamp)}
                 for (label, _), c in zip(witnesses, cosigned, strict=True)]
    if context.json:
        context.print_json({"holds": True, "proved": said, "cosigned": witnessed})
    else:
        context.out.print(f"holds: {said}")
        for seen in witnessed:
            context.out.print(f"  cosigned by witness {seen['name']} at {seen['time']}")
    return EXIT_OK


def _utc(timestamp: int) -> str:
    from datetime import UTC, datetime

    from eventlog.cli.render import iso

    try:
        return iso(datetime.fromtimestamp(timestamp, UTC))
    except (OverflowError, OSError, ValueError):
        return f"POSIX time {timestamp}"


async def run_witness(context: Context) -> int:
    """Accept the new head if it extends the kept one; refuse a fork or a rollback."""
    from eventlog.cli.digest import read_public_key_file
    from eventlog.notes import parse_checkpoint, parse_note
    from eventlog.proofs import (
        CONSISTENCY,
        ProofFailed,
        decode_document,
        open_head,
        witness_decision,
    )

    args = context.args
    key = read_public_key_file(args.key)
    cosigner = _cosigner(args)
    state = Path(args.state)
    try:
        new = open_head(_read_text(args.head, "head"), key, f"head {args.head}")
    except ProofFailed as failed:
        return _refused(context, str(failed))
    kept_file = state / (hashlib.sha256(new.checkpoint.origin.encode()).hexdigest() + ".head")
    kept = (parse_checkpoint(parse_note(_read_text(str(kept_file), "kept head")).text)
            if kept_file.exists() else None)
    proof: list[bytes] | None = None
    if args.proof is not None:
        document = decode_document(_read_bytes(args.proof, "proof"), f"proof {args.proof}")
        if document["type"] != CONSISTENCY:
            raise CommandError(f"{args.proof} is not a consistency proof")
        proof = _proof_between(document, kept, new.checkpoint)
    try:
        said = witness_decision(kept, new.checkpoint, proof)
    except ProofFailed as failed:
        return _refused(context, str(failed))
    if kept is None or kept.size != new.checkpoint.size:
        _keep(state, kept_file, new.note)
    cosigned = None
    if cosigner is not None:
        import time

        from eventlog.notes import cosign_note

        cosigned = cosign_note(new.note, cosigner[0], cosigner[1], int(time.time()))
        if args.output != "-" or not context.json:
            _write(context, args.output, cosigned.encode())
    if context.json:
        context.print_json({"accepted": True, "said": said, "cosigned_head": cosigned})
    else:
        # The cosigned head may be standard output: then the verdict goes to stderr.
        shown = context.err if cosigned is not None and args.output == "-" else context.out
        shown.print(f"accepted: {said}" + (f"; cosigned by {cosigner[0]}" if cosigner else ""))
    return EXIT_OK


def _cosigner(args: argparse.Namespace) -> tuple[str, Any] | None:
    """The witness's own (name, private key), from --witness-key and --name; None without."""
    from eventlog.cli.digest import read_private_key_file
    from eventlog.notes import check_name

    if args.witness_key is None:
        if args.name is not None or args.output != "-":
            raise CommandError("--name and --output are for cosigning: give --witness-key, "
                               "the witness's own private key")
        return None
    if args.name is None:
        raise CommandError("--witness-key needs --name: the witness's key name")
    return check_name(args.name, "--name"), read_private_key_file(args.witness_key)


def _proof_between(document: dict[str, Any], kept: Any, new: Any) -> list[bytes] | None:
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
                           f"{error.strerror or error}", 3) from error


def _refused(context: Context, reason: str) -> int:
    if context.json:
        context.print_json({"holds": False, "reason": reason})
    else:
        context.err.print(f"refused: {reason}")
    return EXIT_FINDINGS


# -- files ---------------------------------------------------------------------------------

def _read_bytes(name: str, what: str) -> bytes:
    try:
        with Path(name).open("rb") as file:
            data = file.read(_MAX_FILE + 1)
    except OSError as error:
        raise CommandError(f"cannot read {what} {name}: {error.strerror or error}",
                           EXIT_USAGE) from error
    if len(data) > _MAX_FILE:
        raise CommandError(f"{what} {name} is larger than {_MAX_FILE} bytes: not a {what}")
    return data


def _read_text(name: str, what: str) -> str:
    try:
        return _read_bytes(name, what).decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{what} {name} is not UTF-8 text") from None


def _write(context: Context, output: str, data: bytes) -> None:
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    target = Path(output)
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    except OSError as error:
        raise CommandError(f"cannot write {target}: {error.strerror or error}") from error
