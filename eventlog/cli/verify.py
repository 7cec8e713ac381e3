"""``eventlog verify``: every hash chain, and every stored view against a rebuild.

Two library calls do the work: `EventLog.verify` recomputes each stream's SHA-256 chain
from the stored bytes, and `projections.compare_views` folds the whole log (into
`SpilledViews`, a temporary file, so memory stays bounded at any size) and compares every
view row with the stored one, a page at a time. Any finding exits with status 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from eventlog.cli.context import Context
from eventlog.cli.digest import read_digest_file, read_public_key_file
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, CommandError
from eventlog.cli.horizon import settle, settle_or_warn
from eventlog.cli.lenient import UndecodableEvent
from eventlog.cli.progress import CountingLog
from eventlog.cli.render import cell, iso, plural, verdict
from eventlog.cli.scope import require_tenant
from eventlog.digest import LogDigest, check_digest
from eventlog.log import EventLog, SpilledViews, TreeFinding
from eventlog.merkle import TreeHead
from eventlog.proofs import SignedHead
from eventlog.records import RecordedEvent, StreamProblem, VerifyReport
from eventlog.transfer import count_events
from projections.rebuilding import ViewDifference, compare_views

UNDECODABLE = "undecodable_event"
"""The finding kind of an event whose bytes do not decode as its type."""
NOT_THE_WRITERS = ("forged", "unsigned")
"""The finding kinds of an event the writer key did not sign."""
KEY_RESTORED = "key_restored"
"""The finding kind of a data key held for a generation the log erased."""


@dataclass(frozen=True)
class Findings:
    """Everything `verify` found, section by section."""

    report: VerifyReport
    differences: list[ViewDifference]
    undecodable: list[RecordedEvent]
    digest: DigestCheck | None = None
    tree: TreeCheck | None = None
    writer_keys: tuple[str, ...] = ()
    """The ids of the writer public keys the signatures were checked against."""

    @property
    def chains(self) -> list[StreamProblem]:
        """The streams' own problems (the blobs' and undecodable events' have their
        sections)."""
        return [problem for problem in self.report.problems
                if problem.blob is None and problem.kind not in (UNDECODABLE, KEY_RESTORED)
                and problem.kind not in NOT_THE_WRITERS]

    @property
    def restored_keys(self) -> list[StreamProblem]:
        """Each data key held for a generation its subject's erasure record erased."""
        return [problem for problem in self.report.problems if problem.kind == KEY_RESTORED]

    @property
    def signatures(self) -> list[StreamProblem]:
        """Each event the writer key did not sign (``forged``, ``unsigned``)."""
        return [problem for problem in self.report.problems
                if problem.kind in NOT_THE_WRITERS]

    @property
    def undecodable_rows(self) -> list[dict[str, Any]]:
        """Each event that does not decode as its type: those the views' rebuild read, and
        those `verify` reported (``undecodable_event``) that the rebuild did not."""
        rows = [undecodable_json(event) for event in self.undecodable]
        seen = {(row["tenant_id"], row["stream_id"], row["version"]) for row in rows}
        rows += [{"kind": UNDECODABLE, "tenant_id": problem.tenant_id,
                  "stream_id": problem.stream_id, "version": problem.version,
                  "position": None, "type": _quoted_type(problem.detail),
                  "error": problem.detail.partition(": ")[2]}
                 for problem in self.report.problems if problem.kind == UNDECODABLE
                 and (problem.tenant_id, problem.stream_id, problem.version) not in seen]
        return rows

    @property
    def blobs(self) -> list[StreamProblem]:
        """The state blobs' problems."""
        return [problem for problem in self.report.problems if problem.blob is not None]

    @property
    def ok(self) -> bool:
        """No finding in any section."""
        return (self.report.ok and not self.differences and not self.undecodable
                and (self.digest is None or not self.digest.problems)
                and (self.tree is None or not self.tree.findings))


@dataclass(frozen=True)
class TreeCheck:
    """A kept signed tree head held against the log: what `EventLog.check_tree` found."""

    file: str
    origin: str
    tenant_id: str
    size: int
    findings: list[TreeFinding]


@dataclass(frozen=True)
class DigestCheck:
    """A kept digest held against the log: its streams, and those that did not reach
    their recorded heads."""

    file: str
    digest: LogDigest
    problems: list[StreamProblem] = field(default_factory=list)
    signature_checked: bool = False
    """Whether the digest's signature was checked against the operator's public key."""

    @property
    def signature(self) -> str:
        """``checked`` (with --key), ``unchecked`` (signed, no --key) or ``unsigned``."""
        if self.digest.signature is None:
            return "unsigned"
        return "checked" if self.signature_checked else "unchecked"


async def run(context: Context) -> int:
    """Verify, print the findings, and exit 1 if there are any."""
    tenant: str | None = context.args.tenant
    digest = _read_digest(context)
    head = _read_head(context)
    async with context.open() as log:
        if tenant is not None:
            await require_tenant(log, tenant)
        await settle_or_warn(context, log)
        with context.progress() as progress:
            chains = progress.add_task("checking hash chains", total=None)
            report = await log.verify(tenant)
            held = None if digest is None else await _hold_digest(
                log, context.args.digest, digest, tenant, checked=context.args.key is not None)
            tree = None if head is None else await _hold_head(log, context.args.head, head)
            progress.update(chains, visible=False)
            undecodable: list[RecordedEvent] = []
            differences = await view_findings(log, tenant, progress, undecodable)
    keys = () if log.writer_keys is None else log.writer_keys.ids
    findings = Findings(report, differences, undecodable, held, tree, keys)
    if context.json:
        context.print_json(_as_json(findings))
    else:
        _print(context, findings)
    return EXIT_OK if findings.ok else EXIT_FINDINGS


def _read_digest(context: Context) -> LogDigest | None:
    """The ``--digest`` file, its signature checked first with ``--key``; a digest that
    holds no stream of the verified scope is refused (it would prove nothing)."""
    args = context.args
    if args.digest is None:
        if args.key is not None and args.head is None:
            raise CommandError("--key checks a digest's or a head's signature: give --digest "
                               "FILE or --head FILE too")
        return None
    key = read_public_key_file(args.key) if args.key is not None else None
    digest = read_digest_file(args.digest, key)
    tenant: str | None = args.tenant
    if not _scoped(digest, tenant).streams:
        covers = (f"tenant {digest.tenant_id!r}" if digest.tenant_id is not None
                  else "the whole log")
        scope = f"of tenant {tenant!r}" if tenant is not None else "at all"
        raise CommandError(f"{args.digest}: the digest (of {covers}) holds no stream "
                           f"{scope}: it would check nothing")
    return digest


def _read_head(context: Context) -> SignedHead | None:
    """The ``--head`` file, its signature checked with ``--key`` (required with it)."""
    from eventlog.cli.keyfiles import read_verifier, read_witness_keys
    from eventlog.cli.transparency import read_signed_head

    args = context.args
    if args.head is None:
        if args.witness_key:
            raise CommandError("--witness-key checks a head's cosignature: give --head FILE")
        return None
    if args.key is None:
        raise CommandError("--head needs --key: the operator's public key that signed it")
    return read_signed_head(args.head, read_verifier(args.key),
                            read_witness_keys(args.witness_key))


async def _hold_head(log: EventLog, file: str, head: SignedHead) -> TreeCheck:
    checkpoint = head.checkpoint
    tenant = head.tenant_id
    assert tenant is not None  # read_signed_head refuses a head that names none
    found = await log.check_tree(tenant, TreeHead(checkpoint.size, checkpoint.root))
    return TreeCheck(file, checkpoint.origin, tenant, checkpoint.size, found)


def _scoped(digest: LogDigest, tenant: str | None) -> LogDigest:
    """``digest`` narrowed to ``tenant``'s streams (all of them for None)."""
    if tenant is None:
        return digest
    heads = tuple(head for head in digest.streams if head.tenant_id == tenant)
    return msgspec.structs.replace(digest, tenant_id=tenant, streams=heads)


async def _hold_digest(
    log: EventLog, file: str, digest: LogDigest, tenant: str | None, *, checked: bool
) -> DigestCheck:
    """The streams of ``digest`` (of ``tenant``'s) the log no longer holds up to their
    heads: cut, dropped or rewritten."""
    digest = _scoped(digest, tenant)
    return DigestCheck(file, digest, await check_digest(log, digest), checked)


async def view_findings(
    log: EventLog, tenant: str | None, progress: Progress,
    undecodable: list[RecordedEvent] | None = None,
) -> list[ViewDifference]:
    """The view rows that differ from a rebuild, in two passes when the first finds any.

    A write committing while the log is read can make its rows differ for a moment (the
    rebuild read the log before it, the stored views are read after). Only rows that
    differ again once every transaction running after the first pass has ended are
    findings: a changed or corrupted row differs every time. Events of the scope that do
    not decode as their type are appended to ``undecodable`` (when given) as the log is
    read.
    """
    first = await _compare(log, tenant, progress, undecodable)
    if not first:
        return first
    await settle(log)
    suspects = {(difference.table, difference.key) for difference in first}
    return [d for d in await _compare(log, tenant, progress) if (d.table, d.key) in suspects]


async def _compare(
    log: EventLog, tenant: str | None, progress: Progress,
    undecodable: list[RecordedEvent] | None = None,
) -> list[ViewDifference]:
    task = progress.add_task("rebuilding views from the log", total=await count_events(log))

    def seen(events: list[RecordedEvent]) -> None:
        if undecodable is not None:
            undecodable.extend(event for event in events if isinstance(
                event.event, UndecodableEvent) and tenant in (None, event.tenant_id)
                and all(event.position != e.position for e in undecodable))

    # Views and the rebuild both as stored (sealed fields sealed) on an encrypted log.
    counting = CountingLog(log.as_stored(), lambda n: progress.advance(task, n), seen)
    differences = await compare_views(counting.as_log(), spill=SpilledViews)
    progress.update(task, visible=False)
    return [d for d in differences if tenant is None or (d.key and d.key[0] == tenant)]


def changed_columns(difference: ViewDifference) -> list[str]:
    """The columns whose stored value differs from the rebuilt one (all when a row is
    missing on one side)."""
    stored, rebuilt = difference.stored or {}, difference.rebuilt or {}
    names = list(dict.fromkeys([*rebuilt, *stored]))
    return [name for name in names if stored.get(name) != rebuilt.get(name)]


def describe(difference: ViewDifference) -> str:
    """One line saying how a stored view row differs from the rebuilt one."""
    if difference.stored is None:
        return "missing from the stored view (the log says it should exist)"
    if difference.rebuilt is None:
        return "in the stored view but not in a rebuild from the log"
    parts = [
        f"{name}: stored {cell(difference.stored.get(name), 24)}, "
        f"log says {cell(difference.rebuilt.get(name), 24)}"
        for name in changed_columns(difference)
    ]
    return "; ".join(parts)


def undecodable_json(event: RecordedEvent) -> dict[str, Any]:
    """An event whose stored bytes do not decode as its type, for scripts."""
    error = event.event.error if isinstance(event.event, UndecodableEvent) else ""
    return {"kind": UNDECODABLE, "tenant_id": event.tenant_id, "stream_id": event.stream_id,
            "version": event.version, "position": event.position, "type": event.type,
            "error": error}


def _quoted_type(detail: str) -> str:
    """The event type an ``undecodable_event`` problem's detail names (``a 'x' event``)."""
    return detail.split("'")[1] if detail.count("'") >= 2 else ""


def _as_json(findings: Findings) -> dict[str, Any]:
    report = findings.report
    return {
        "ok": findings.ok,
        "streams": report.streams,
        "events": report.events,
        "chain_problems": [_problem_json(problem) for problem in findings.chains],
        "signatures": {
            "checked": report.signatures_checked, "keys": list(findings.writer_keys),
            "signed_events": report.signed_events, "signing_starts": report.signing_starts,
            "problems": [_problem_json(problem) for problem in findings.signatures]},
        "erasure_problems": [_problem_json(problem) for problem in findings.restored_keys],
        "blobs_checked": report.blobs,
        "blobs_withheld": report.withheld_blobs,
        "blob_problems": [_blob_json(problem) for problem in findings.blobs],
        "digest": None if findings.digest is None else _digest_json(findings.digest),
        "tree_head": None if findings.tree is None else {
            "file": findings.tree.file, "origin": findings.tree.origin,
            "tenant_id": findings.tree.tenant_id, "size": findings.tree.size,
            "problems": [{"kind": f.kind, "detail": f.detail} for f in findings.tree.findings]},
        "view_differences": [
            {"table": d.table, "key": list(d.key), "columns": changed_columns(d),
             "stored": d.stored, "rebuilt": d.rebuilt}
            for d in findings.differences
        ],
        "undecodable_events": findings.undecodable_rows,
    }


def _problem_json(problem: StreamProblem) -> dict[str, Any]:
    return {"tenant_id": problem.tenant_id, "stream_id": problem.stream_id,
            "version": problem.version, "kind": problem.kind, "detail": problem.detail}


def _blob_json(problem: StreamProblem) -> dict[str, Any]:
    return {"tenant_id": problem.tenant_id, "blob": problem.blob, "kind": problem.kind,
            "detail": problem.detail, "streams": list(problem.streams)}


def _digest_json(check: DigestCheck) -> dict[str, Any]:
    held = len(check.digest.streams)
    signed = check.digest.signature
    return {"file": check.file, "digest": check.digest.digest, "signature": check.signature,
            "signed_by": None if signed is None else signed.key_id,
            "taken_at": iso(check.digest.taken_at), "streams_held": held,
            "streams_at_heads": held - len(check.problems),
            "problems": [_problem_json(problem) for problem in check.problems]}


_SHOWN_STREAMS = 5
"""Streams named per blob problem on the screen (JSON names them all)."""


def _print(context: Context, findings: Findings) -> None:
    out, report = context.out, findings.report
    out.print(verdict(f"Hash chains: {plural(report.streams, 'stream')}, "
                      f"{plural(report.events, 'event')}",
                      not findings.chains, f"{len(findings.chains)} broken"))
    if findings.chains:
        table = Table("tenant", "stream", "version", "problem", "detail",
                      title="First broken link of each stream", title_justify="left")
        for problem in findings.chains:
            table.add_row(problem.tenant_id, problem.stream_id, str(problem.version),
                          problem.kind, problem.detail)
        out.print(table)
    _print_signatures(context, findings)
    _print_restored_keys(context, findings)
    _print_blobs(context, findings)
    if findings.digest is not None:
        _print_digest(context, findings.digest)
    if findings.tree is not None:
        tree = findings.tree
        out.print(verdict(f"Tree head {tree.file}: its root is the root of the first "
                          f"{plural(tree.size, 'event')} of tenant {tree.tenant_id!r}",
                          not tree.findings,
                          "it does not hold"))
        for finding in tree.findings:
            out.print(f"  {finding.kind}: {finding.detail}")
    undecodable, differences = findings.undecodable_rows, findings.differences
    out.print(verdict("Every event decodes as its type", not undecodable,
                      plural(len(undecodable), "does not", "do not")))
    if undecodable:
        table = Table("#", "tenant", "stream", "version", "type", "error",
                      title=f"Events that do not decode ({UNDECODABLE})", title_justify="left")
        for found in undecodable:
            position = found["position"]
            table.add_row("" if position is None else str(position), found["tenant_id"],
                          found["stream_id"], str(found["version"]), found["type"],
                          found["error"])
        out.print(table)
    out.print(verdict("Views against a rebuild from the log", not differences,
                      plural(len(differences), "row differs", "rows differ")))
    if differences:
        shown = differences[: context.args.max_rows]
        table = Table("table", "key", "difference", title="Differing view rows",
                      title_justify="left")
        for difference in shown:
            key = ", ".join(cell(part, 40) for part in difference.key)
            table.add_row(difference.table, key, describe(difference))
        out.print(table)
        if len(differences) > len(shown):
            out.print(f"… and {len(differences) - len(shown)} more (--max-rows)")


def _print_signatures(context: Context, findings: Findings) -> None:
    """The writer signatures: how many, checked against which keys, from where each
    tenant's signing starts, and each event the writer key did not sign."""
    out, report, found = context.out, findings.report, findings.signatures
    if not report.signing_starts and not found:
        out.print("Writer signatures: none (no event is signed: written without a writer "
                  "key, or before signed appends)")
        return
    checked = (f"checked against writer key {', '.join(findings.writer_keys)}"
               if report.signatures_checked else "NOT checked")
    out.print(verdict(f"Writer signatures: {plural(report.signed_events, 'signed event')}, "
                      f"{checked}", not found,
                      f"{plural(len(found), 'event is', 'events are')} not the writer's"))
    for tenant, start in sorted(report.signing_starts.items()):
        out.print(f"  tenant {tenant!r}: every event from position {start} on must be "
                  "signed (an unsigned event before it was written before signing began)")
    if report.signing_starts and not report.signatures_checked:
        out.print("  notice: signatures were not checked for lack of a writer public key: "
                  "give --keyring or --writer-key FILE (`eventlog keys public` writes it); "
                  "only unsigned events could be found")
    if found:
        table = Table("tenant", "stream", "version", "problem", "detail",
                      title="Events the writer key did not sign", title_justify="left")
        for problem in found:
            table.add_row(problem.tenant_id, problem.stream_id, str(problem.version),
                          problem.kind, problem.detail)
        out.print(table)


def _print_restored_keys(context: Context, findings: Findings) -> None:
    """Each data key the key table holds for a generation its subject's erasure record
    erased (silent when there is none)."""
    found = findings.restored_keys
    if not found:
        return
    held = plural(len(found), "erased key is", "erased keys are")
    context.out.print(verdict("Erasures", False, f"{held} held again (refused, not served)"))
    table = Table("tenant", "subject", "erasure record", "detail",
                  title="Keys held after their erasure", title_justify="left")
    for problem in found:
        table.add_row(problem.tenant_id, problem.stream_id.removeprefix("erasure:"),
                      f"{problem.stream_id} v{problem.version}", problem.detail)
    context.out.print(table)


def _print_blobs(context: Context, findings: Findings) -> None:
    out, report, blobs = context.out, findings.report, findings.blobs
    out.print(verdict(f"State blobs: {report.blobs} checked", not blobs, f"{len(blobs)} wrong"))
    if report.withheld_blobs:
        out.print(f"  notice: {plural(report.withheld_blobs, 'blob')} withheld by an import "
                  "of a file exported without state (recorded in the log as withheld; "
                  "absent by intent, not a finding)")
    if not blobs:
        return
    table = Table("tenant", "blob", "problem", "detail", "referenced by",
                  title="State blobs", title_justify="left")
    for problem in blobs:
        shown = list(problem.streams[:_SHOWN_STREAMS])
        if len(problem.streams) > len(shown):
            shown.append(f"… and {len(problem.streams) - len(shown)} more")
        table.add_row(problem.tenant_id, f"{(problem.blob or '')[:16]}…", problem.kind,
                      problem.detail.split(": ", 1)[-1],
                      "\n".join(shown) or "no event names it")
    out.print(table)


def _print_signature(context: Context, check: DigestCheck) -> None:
    signed = check.digest.signature
    if signed is None:
        context.out.print(f"  notice: {check.file} is unsigned: it proves the log matches "
                          "the file, not who wrote the file (`eventlog digest --key` signs)")
    elif check.signature_checked:
        context.out.print(verdict(f"Digest signature by key {signed.key_id}", True, ""))
    else:
        context.out.print(f"  notice: {check.file} is signed by key {signed.key_id}; the "
                          "signature was not checked (--key PUBLIC_KEY_FILE checks it)")


def _print_digest(context: Context, check: DigestCheck) -> None:
    _print_signature(context, check)
    held = len(check.digest.streams)
    label = (f"Digest {check.file} (taken {iso(check.digest.taken_at)}): "
             f"{plural(held, 'stream')} held against it")
    if not check.problems:
        context.out.print(Text.assemble(f"{label}: ", (
            "all reached their recorded heads" if held != 1
            else "it reached its recorded head", "green")))
        return
    context.out.print(verdict(label, False, f"{len(check.problems)} did not reach their "
                                            "recorded heads"))
    table = Table("tenant", "stream", "head", "problem", "detail",
                  title="Streams the digest holds that the log no longer does",
                  title_justify="left")
    for problem in check.problems:
        table.add_row(problem.tenant_id, problem.stream_id, str(problem.version),
                      problem.kind, problem.detail)
    context.out.print(table)
