"""``eventlog digest``: the head of every stream, for an auditor to keep elsewhere.

The work is `eventlog.digest`; `eventlog verify --digest FILE` checks a kept digest.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_OK, CommandError
from eventlog.cli.files import opened_output
from eventlog.cli.horizon import settle_or_warn
from eventlog.cli.keyfiles import read_private_key_file as read_private_key_file
from eventlog.cli.keyfiles import read_public_key_file as read_public_key_file
from eventlog.cli.render import pairs_table, plural
from eventlog.cli.scope import require_tenant
from eventlog.digest import LogDigest, decode_digest, encode_digest, sign_digest, take_digest
from eventlog.errors import DigestRefused
from eventlog.records import StreamProblem

if TYPE_CHECKING:
    from eventlog.signing import Ed25519PublicKey

MAX_DIGEST_FILE_BYTES = 256 * 1024 * 1024
"""The largest digest file `verify --digest` reads (and `digest` writes): 256 MiB, some
1.5 million stream heads. A larger file (or ``/dev/zero``) is refused once this much is
read, never read whole."""
_CHUNK = 1024 * 1024


async def run(context: Context) -> int:
    """Verify, then write the digest; a log that does not verify gets no digest."""
    args = context.args
    key = read_private_key_file(args.key) if args.key is not None else None
    async with context.open() as log:
        if args.tenant is not None:
            await require_tenant(log, args.tenant)
        await settle_or_warn(context, log)
        report = await log.verify(args.tenant)
        if not report.ok:
            for problem in report.problems:
                context.err.print(_problem_line(problem))
            context.err.print("the log does not verify: no digest written "
                              "(see `eventlog verify`)")
            return EXIT_FINDINGS
        digest = await take_digest(log, args.tenant)
    if key is not None:
        digest = sign_digest(digest, key)
    document = encode_digest(digest)
    if len(document) > MAX_DIGEST_FILE_BYTES:
        raise CommandError(f"the digest would hold {plural(len(digest.streams), 'stream')} "
                           f"in {plural(len(document), 'byte')}, more than the "
                           f"{MAX_DIGEST_FILE_BYTES} a digest file may hold (verify --digest "
                           "could not read it back): take one digest per tenant (--tenant)")
    if args.output == "-":
        sys.stdout.buffer.write(document)
        sys.stdout.flush()
        context.err.print(_summary(digest, "standard output"))
        return EXIT_OK
    _write_whole(Path(args.output), document)
    if context.json:
        context.print_json({"file": args.output, "streams": len(digest.streams),
                            "digest": digest.digest, "signed_by": _signer(digest)})
    else:
        context.out.print(_summary(digest, args.output))
    return EXIT_OK


def read_digest_file(name: str, key: Ed25519PublicKey | None = None) -> LogDigest:
    """A digest file read and checked (its signature first, against ``key`` when given),
    or one clear error naming the file: a digest that does not hold (edited, unsigned or
    not signed by ``key``) exits 1, a file that is no digest 2."""
    try:
        data = _read_bounded(Path(name))
    except OSError as error:
        raise CommandError(f"cannot read digest {name}: {error.strerror or error}") from error
    if data is None:
        raise CommandError(f"digest {name} is larger than {MAX_DIGEST_FILE_BYTES} bytes, the "
                           "most a digest file holds: not a digest written by `eventlog "
                           "digest`")
    try:
        return decode_digest(data, key)
    except DigestRefused as refused:
        raise CommandError(f"{name}: {refused}", EXIT_FINDINGS) from refused
    except Exception as error:
        raise CommandError(f"{name}: {error}") from error


def _signer(digest: LogDigest) -> str | None:
    return None if digest.signature is None else digest.signature.key_id


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None once it proves longer than `MAX_DIGEST_FILE_BYTES` (a
    regular file by its size, anything else, a device or a pipe, as it is read)."""
    with path.open("rb") as handle:
        if path.is_file() and path.stat().st_size > MAX_DIGEST_FILE_BYTES:
            return None
        data = bytearray()
        while chunk := handle.read(min(_CHUNK, MAX_DIGEST_FILE_BYTES + 1 - len(data))):
            data += chunk
            if len(data) > MAX_DIGEST_FILE_BYTES:
                return None
        return bytes(data)


def _problem_line(problem: StreamProblem) -> str:
    """One finding on one line: a stream's at its version, a blob's with its streams."""
    if problem.blob is None:
        return (f"{problem.tenant_id} {problem.stream_id} v{problem.version}: "
                f"{problem.kind}: {problem.detail}")
    streams = ", ".join(problem.streams) or "no event names it"
    return f"{problem.tenant_id} {problem.kind}: {problem.detail} (referenced by {streams})"


def _summary(digest: LogDigest, where: str) -> Any:
    return pairs_table(f"Digest written to {where}", [
        ("streams", str(len(digest.streams))),
        ("events covered", str(sum(head.version for head in digest.streams))),
        ("tenant", digest.tenant_id or "every tenant"),
        ("digest", digest.digest),
        ("signed by", f"key {digest.signature.key_id}" if digest.signature is not None
         else "nobody (unsigned: it proves the log matches it, not who wrote it; --key "
              "signs)"),
    ])


def _write_whole(target: Path, document: bytes) -> None:
    """Write ``document`` to ``target`` whole (`eventlog.cli.files`: a regular file is
    renamed into place, a device or FIFO written as it is)."""
    with opened_output(str(target)) as handle:
        handle.write(document)
