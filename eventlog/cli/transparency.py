"""The transparency log's commands on the operator's side: ``tree-head``, ``prove`` and
``tree-rebuild``, on the log. ``verify --head`` lives with verify; the auditor's
``check-proof``, ``witness`` and ``verifier-key``, which open no log, in
`eventlog.cli.auditor`.

The documents and checks are `eventlog.proofs`; keys are read by `eventlog.cli.keyfiles`.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import TYPE_CHECKING, Any

from eventlog.cli.auditor import MAX_FILE
from eventlog.cli.console import plural
from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, CommandError
from eventlog.cli.files import STDOUT, read_text, write_output
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.keyfiles import PublicKey, read_verifier
from eventlog.cli.keyfiles import read_witness_keys as read_witness_keys
from eventlog.cli.scope import require_tenant
from eventlog.errors import InvalidInput

if TYPE_CHECKING:
    from eventlog.proofs import SignedHead
    from eventlog.signing import Ed25519PublicKey


# -- the operator's side ------------------------------------------------------------------

async def run_head(context: Context) -> int:
    """Integrate, then sign and write the head: its origin ``NAME/TENANT`` (the tenant
    percent-encoded) is also the key name it is signed under."""
    from eventlog.cli.keyfiles import read_private_key_file
    from eventlog.notes import Checkpoint, check_name, origin_for, sign_checkpoint, verifier_key

    args = context.args
    origin = origin_for(check_name(args.name, "--name"), args.tenant)
    key = read_private_key_file(args.key)
    async with context.open() as log:
        await require_tenant(log, args.tenant)
        await settle_or_warn(context, log)
        head = await log.tree_head(args.tenant)
    text = sign_checkpoint(Checkpoint(origin, head.size, head.root), origin, key)
    write_output(args.output, text.encode())
    if args.output != STDOUT:
        context.out.print(f"head of {plural(head.size, 'event')} of tenant {args.tenant!r} "
                          f"written to {args.output}, under the key name {origin}; its "
                          "verifier key "
                          f"(for note.Open and other tlog tools): "
                          f"{verifier_key(origin, key.public_key())}")
    return EXIT_OK


async def run_prove(context: Context) -> int:
    """Write an inclusion or a consistency proof under the given head."""
    from eventlog.proofs import consistency_document

    args = context.args
    if (args.event_id is None) == (args.old_head is None):
        raise CommandError("give EVENT_ID (an inclusion proof) or --from OLD_HEAD (a "
                           "consistency proof), not both or neither")
    head = _head_for(args.head, args.tenant)
    old = _head_for(args.old_head, args.tenant) if args.old_head is not None else None
    event_id = _event_id(args.event_id) if args.event_id is not None else None
    document: dict[str, Any]
    async with context.open() as log:
        await same_tree(log, head)
        if old is not None:
            await same_tree(log, old)
            if old.checkpoint.size > head.checkpoint.size:
                raise CommandError(f"--from is a head of {plural(old.checkpoint.size, 'event')}, "
                                   f"larger than --head's {head.checkpoint.size}: swap them")
            hashes = await log.prove_consistency(args.tenant, old.checkpoint.size,
                                                 head.checkpoint.size)
            document = consistency_document(old, head, hashes)
        else:
            assert event_id is not None
            document = await inclusion_proof(log, args.tenant, event_id, head)
    write_output(args.output, (json.dumps(document, indent=2) + "\n").encode())
    return EXIT_OK


async def inclusion_proof(log: Any, tenant: str, event_id: uuid.UUID, head: Any
                          ) -> dict[str, Any]:
    """The inclusion proof document of the tenant's event under ``head`` (what `prove`
    writes and `check-proof` checks); a `CommandError` when the head's tree does not hold
    it, or holds another leaf where it should be."""
    from eventlog.proofs import inclusion_document

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
    return inclusion_document(head, event, proof)


async def run_rebuild(context: Context) -> int:
    """Rebuild the tenant's tree; refused (status 1, nothing written) past a kept head."""
    from eventlog.errors import TreeRebuildRefused
    from eventlog.merkle import TreeHead

    args = context.args
    if args.head and args.key is None:
        raise CommandError("--head needs --key: the operator's public key that signed it")
    heads = []
    if args.head:
        key = read_verifier(args.key)
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


def read_signed_head(file: str, key: PublicKey,
                     witnesses: list[tuple[str, Ed25519PublicKey]] | None = None) -> SignedHead:
    """The signed head of an eventlog tenant in ``file``, its signature checked with
    ``key`` and, for each of ``witnesses``, its cosignature; a head without them is a
    finding (exit status 1), a head whose origin names no tenant bad input (2)."""
    from eventlog.proofs import ProofFailed, open_head, require_cosignatures

    try:
        head = open_head(_read_text(file, "head"), key.key, f"head {file}", key.name)
        require_cosignatures(head, witnesses or [], f"head {file}")
    except ProofFailed as failed:
        raise CommandError(str(failed), EXIT_FINDINGS) from failed
    _tenant_of(file, head)
    return head


def read_head(file: str) -> Any:
    """The unchecked head in ``file`` of the tenant its origin names (`prove` and the
    console prove under it; `check-proof` checks its signature)."""
    from eventlog.proofs import open_head

    head = open_head(_read_text(file, "head"), None, f"head {file}")
    _tenant_of(file, head)
    return head


def _head_for(file: str, tenant: str) -> Any:
    from eventlog.proofs import open_head

    head = open_head(_read_text(file, "head"), None, f"head {file}")
    if _tenant_of(file, head) != tenant:
        raise CommandError(f"{file} is a head of tenant {head.tenant_id!r}, not {tenant!r}")
    return head


def _tenant_of(file: str, head: SignedHead) -> str:
    if head.tenant_id is None:
        raise CommandError(f"{file} is not the head of an eventlog tenant: no tenant is "
                           f"named by its origin {head.checkpoint.origin!r} (NAME/TENANT)")
    return head.tenant_id


async def same_tree(log: Any, head: Any) -> None:
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


# -- files ---------------------------------------------------------------------------------

def _read_text(name: str, what: str) -> str:
    return read_text(name, what, MAX_FILE)
