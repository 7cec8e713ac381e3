"""``eventlog retention apply`` and ``eventlog hold``: retention passes and legal holds.

The work is `eventlog.retention` (``log.retention``); this module reads the options or
the policy file, runs one pass per tenant and prints what each did.
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK, CommandError
from eventlog.cli.render import iso, pairs_table
from eventlog.cli.scope import require_tenant
from eventlog.errors import InvalidInput
from eventlog.retention.decisions import RetentionPolicy, check_policy
from eventlog.retention.policy import load_policies


def _policies(args: argparse.Namespace) -> dict[str, RetentionPolicy]:
    """The tenants and policies the command line names, checked before any pass runs."""
    given = args.older_than is not None or args.keep_latest is not None
    if args.policy is not None:
        if given or args.tenant is not None:
            raise CommandError("--policy names the tenants and their policies: give no "
                               "TENANT, --older-than or --keep-latest with it")
        return load_policies(args.policy)
    if args.tenant is None:
        raise CommandError("name a TENANT (or a --policy FILE)")
    if not given:
        raise CommandError("give --older-than DAYS, --keep-latest K or both (or --policy)")
    try:
        return {args.tenant: check_policy(args.older_than, args.keep_latest)}
    except InvalidInput as error:
        name = {"older_than": "--older-than", "keep_latest": "--keep-latest"}.get(
            error.field, error.field)
        raise CommandError(f"{name}: {error.reason}") from None


async def run_retention(context: Context) -> int:
    """One pass per tenant; print (or --json) what each did."""
    policies = _policies(context.args)
    reports = []
    async with context.open() as log:
        for tenant in policies:  # every tenant first: a typo touches none
            await require_tenant(log, tenant)
        for tenant, policy in policies.items():
            reports.append(await log.retention.apply(
                tenant, older_than=policy.older_than, keep_latest=policy.keep_latest,
                dry_run=context.args.dry_run, batch_size=context.args.batch_size))
    if context.json:
        context.print_json({"passes": [report.as_dict() for report in reports]})
        return EXIT_OK
    for report in reports:
        title = f"Retention {'plan (dry run)' if report.dry_run else 'pass'}: {report.tenant_id}"
        facts = report.as_dict()
        rows = [(name.replace("_", " "), facts[name]) for name in (
            "checkpoints", "sessions", "threads", "released", "blobs_purged", "batches")]
        for name in ("held", "open_batches", "skipped", "expired_subjects"):
            if facts[name]:
                rows.append((name.replace("_", " "), ", ".join(facts[name])))
        context.out.print(pairs_table(title, rows))
        for item in report.purged:
            context.out.print(f"  {item.kind} {item.id}: {len(item.checkpoints)} "
                              f"{'record' if len(item.checkpoints) == 1 else 'records'}"
                              f"{' (emptied)' if item.emptied else ''}")
    return EXIT_OK


async def run_hold(context: Context) -> int:
    """Place, release or list holds."""
    args = context.args
    if not args.list and args.subject is None:
        raise CommandError("name the SUBJECT to hold or release (or --list)")
    async with context.open() as log:
        await require_tenant(log, args.tenant)
        if args.list:
            holds = await log.retention.holds(args.tenant)
            facts: dict[str, Any] = {"tenant": args.tenant, "holds": [
                {"subject": h.subject, "reason": h.reason, "placed_at": iso(h.placed_at),
                 "position": h.position} for h in holds]}
        elif args.release:
            released = await log.retention.release(args.tenant, args.subject,
                                                   reason=args.reason)
            facts = {"tenant": args.tenant, "subject": args.subject, "released": released}
        else:
            hold = await log.retention.hold(args.tenant, args.subject, reason=args.reason)
            facts = {"tenant": args.tenant, "subject": hold.subject, "held": True,
                     "reason": hold.reason, "placed_at": iso(hold.placed_at)}
    if context.json:
        context.print_json(facts)
    elif args.list:
        context.out.print(f"{len(facts['holds'])} legal "
                          f"{'hold' if len(facts['holds']) == 1 else 'holds'} in "
                          f"{args.tenant}")
        for item in facts["holds"]:
            context.out.print(f"  {item['subject']}: since {item['placed_at']}"
                              f"{' — ' + item['reason'] if item['reason'] else ''}")
    elif args.release:
        context.out.print(f"{args.subject}: hold released" if facts["released"]
                          else f"{args.subject}: no hold to release")
    else:
        context.out.print(f"{args.subject}: under legal hold since {facts['placed_at']}")
    return EXIT_OK
