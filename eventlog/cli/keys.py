"""``eventlog keys init|rotate|init-writer|rotate-writer|public`` and ``eventlog erase``:
the keyring of an encrypted, signed log.

A keyring holds the key-encryption key (KEK) that wraps each subject's data key, and the
writer key that signs every append; neither secret is ever printed. ``keys public``
prints what an auditor needs instead: the writer's public keys (PEM, and as C2SP
signed-note verifier keys). ``erase`` destroys a subject's data key (its sealed data can
never be read again) and records who and why; it needs no keyring.
"""

from __future__ import annotations

import getpass
from dataclasses import asdict
from typing import Any

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_NOTHING, EXIT_OK, EXIT_USAGE, CommandError
from eventlog.cli.render import plural


async def run_keys(context: Context) -> int:
    """``keys init`` or ``keys rotate``."""
    args = context.args
    if args.action == "init":
        return _init(context)
    if args.action in ("init-writer", "rotate-writer"):
        return _writer(context)
    if args.action == "public":
        return _public(context)
    if args.to is None:
        raise CommandError("keys rotate needs --to NEW (a keyring from `eventlog keys "
                           "init`)", EXIT_USAGE)
    if context.keyring is None:
        raise CommandError("keys rotate needs the current keyring: --keyring OLD (or "
                           "$EVENTLOG_KEYRING)", EXIT_USAGE)
    async with context.open(upgrade=True) as log:
        done = await log.rotate_keys(args.to, page=args.page)
    if context.json:
        context.print_json(asdict(done))
    else:
        context.out.print(f"re-wrapped {plural(done.rewrapped, 'data key')} under {args.to} "
                          f"({done.already} already were, {done.erased} erased, "
                          f"{done.foreign} under another keyring)")
    return EXIT_FINDINGS if done.foreign else EXIT_OK


def _init(context: Context) -> int:
    from eventlog.crypto import init_keyring

    if context.args.file is None:
        raise CommandError("keys init needs FILE: where to write the keyring", EXIT_USAGE)
    ring = init_keyring(context.args.file)
    writer = _writer_id(ring)
    if context.json:
        context.print_json({"file": str(ring.path), "key_id": ring.key_id,
                            "writer_key_id": writer})
    else:
        context.out.print(f"wrote keyring {ring.path} (key id {ring.key_id}, writer key id "
                          f"{writer}, mode 0600): keep it safe, without it the encrypted "
                          "data cannot be read and nothing can be signed; give auditors "
                          f"`eventlog keys public {ring.path}`")
    return EXIT_OK


def _writer(context: Context) -> int:
    """Give a keyring its writer key, or replace it (the old public key kept)."""
    from eventlog.crypto import add_writer_key, rotate_writer_key

    file = _keyring_file(context)
    rotate = context.args.action == "rotate-writer"
    ring = rotate_writer_key(file) if rotate else add_writer_key(file)
    writer = _writer_id(ring)
    if context.json:
        context.print_json({"file": str(ring.path), "writer_key_id": writer,
                            "writer_keys": len(ring.writer_public_keys)})
    elif rotate:
        earlier = len(ring.writer_public_keys) - 1
        context.out.print(f"{ring.path}: a new writer key ({writer}) signs from now on; "
                          "what was signed before still checks, under "
                          f"{plural(earlier, 'earlier key')} kept (give auditors `eventlog "
                          "keys public` again)")
    else:
        context.out.print(f"{ring.path}: writer key {writer} added; a log opened with this "
                          "keyring signs every append from now on")
    return EXIT_OK


def _public(context: Context) -> int:
    """Print (or write) every writer public key: PEM and verifier key, current first."""
    from eventlog.cli.files import write_output
    from eventlog.crypto import FileKeyring
    from eventlog.notes import check_name
    from eventlog.writer_keys import WriterKeys, public_pem, verifier_key_line

    ring = FileKeyring(_keyring_file(context))
    name = check_name(context.args.name, "--name")
    keys = WriterKeys(ring.writer_public_keys)
    if not keys:
        raise CommandError(f"{ring.path} holds no writer key (`eventlog keys init-writer "
                           f"{ring.path}` gives it one)", EXIT_USAGE)
    current = ring.writer_public_key is not None
    shown = [{"key_id": key_id, "current": current and index == 0,
              "pem": public_pem(public), "verifier_key": verifier_key_line(public, name)}
             for index, (key_id, public) in enumerate(zip(keys.ids, keys.public_keys(),
                                                          strict=True))]
    if context.json:
        context.print_json({"file": str(ring.path), "keys": shown})
        return EXIT_OK
    text = "".join(
        f"# eventlog writer key {key['key_id']} ("
        + ("current: signs new events" if key["current"] else "retired: checks what it signed")
        + f")\n# verifier key: {key['verifier_key']}\n{key['pem']}" for key in shown)
    write_output(context.args.output, text.encode())
    return EXIT_OK


def _keyring_file(context: Context) -> str:
    file: str | None = context.args.file or context.keyring
    if file is None:
        raise CommandError(f"keys {context.args.action} needs the keyring: FILE, --keyring "
                           "FILE or $EVENTLOG_KEYRING", EXIT_USAGE)
    return file


def _writer_id(ring: Any) -> str | None:
    from eventlog.writer_keys import key_id_of

    public = ring.writer_public_key
    return None if public is None else key_id_of(public).hex()


async def run_erase(context: Context) -> int:
    """Destroy the subject's data keys and record the erasure. A subject erased before is
    no error; one that holds no key is (`EXIT_NOTHING`: its data, if any, stays), unless
    ``--if-present``."""
    args = context.args
    actor = args.actor if args.actor is not None else getpass.getuser()
    async with context.open(upgrade=True) as log:
        destroyed = await log.erase(args.tenant, args.subject, reason=args.reason,
                                    actor=actor)
        held = [] if destroyed else await log.subject_keys(args.tenant, args.subject)
        # The log's record decides "erased before", even where the key rows are gone.
        recorded = None if destroyed else await log.erasure_of(args.tenant, args.subject)
        when = held[-1].erased_at if held else None if recorded is None else recorded.at
        erased_before = bool(held) or (recorded is not None and recorded.through > 0)
        encrypted = bool(destroyed or erased_before) or bool(await log.encrypted_under())
    named = f"subject {args.subject!r} of tenant {args.tenant!r}"
    if not destroyed and not erased_before and not args.if_present:
        raise CommandError(f"{named} holds no data key{_why_nothing(encrypted)}",
                           EXIT_NOTHING)
    if context.json:
        context.print_json({"tenant": args.tenant, "subject": args.subject,
                            "destroyed": destroyed, "erased_before": erased_before})
    elif destroyed:
        context.out.print(f"erased {named}: {destroyed} data key(s) destroyed, the erasure "
                          "recorded")
    elif erased_before:
        context.out.print(f"{named} was erased before (its keys destroyed at "
                          f"{when}): nothing left to destroy")
    else:
        context.out.print(f"{named} holds no data key: nothing to erase (--if-present)")
    return EXIT_OK


def _why_nothing(encrypted: bool) -> str:
    if not encrypted:
        return (": the log is not encrypted, so its data is stored in the clear and erasing "
                "(which destroys keys) cannot remove it; nothing was erased")
    return (": nothing was erased (misspelled? never written under the keyring?); "
            "--if-present accepts a subject that is not there")
