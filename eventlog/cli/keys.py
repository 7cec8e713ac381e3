"""``eventlog keys init|rotate`` and ``eventlog erase``: the keyring of an encrypted log.

A keyring holds the key-encryption key (KEK) that wraps each subject's data key; the KEK
is never printed. ``erase`` destroys a subject's data key (its sealed data can never be
read again) and records who and why; it needs no keyring.
"""

from __future__ import annotations

import getpass
from dataclasses import asdict

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_FINDINGS, EXIT_NOTHING, EXIT_OK, EXIT_USAGE, CommandError
from eventlog.cli.render import plural


async def run_keys(context: Context) -> int:
    """``keys init`` or ``keys rotate``."""
    args = context.args
    if args.action == "init":
        return _init(context)
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
    if context.json:
        context.print_json({"file": str(ring.path), "key_id": ring.key_id})
    else:
        context.out.print(f"wrote keyring {ring.path} (key id {ring.key_id}, mode 0600): "
                          "keep it safe, without it the encrypted data cannot be read")
    return EXIT_OK


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
        encrypted = bool(destroyed or held) or bool(await log.encrypted_under())
    named = f"subject {args.subject!r} of tenant {args.tenant!r}"
    if not destroyed and not held and not args.if_present:
        raise CommandError(f"{named} holds no data key{_why_nothing(encrypted)}",
                           EXIT_NOTHING)
    if context.json:
        context.print_json({"tenant": args.tenant, "subject": args.subject,
                            "destroyed": destroyed, "erased_before": bool(held)})
    elif destroyed:
        context.out.print(f"erased {named}: {destroyed} data key(s) destroyed, the erasure "
                          "recorded")
    elif held:
        context.out.print(f"{named} was erased before (its keys destroyed at "
                          f"{held[-1].erased_at}): nothing left to destroy")
    else:
        context.out.print(f"{named} holds no data key: nothing to erase (--if-present)")
    return EXIT_OK


def _why_nothing(encrypted: bool) -> str:
    if not encrypted:
        return (": the log is not encrypted, so its data is stored in the clear and erasing "
                "(which destroys keys) cannot remove it; nothing was erased")
    return (": nothing was erased (misspelled? never written under the keyring?); "
            "--if-present accepts a subject that is not there")
