"""The command line of ``retention`` and ``hold``, declared without
`eventlog.cli.retention` (imported when the command runs: its handlers are named
``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``retention`` and ``hold``."""
    retention = add_command(
        commands, common, "retention", "purge state past a tenant's retention policy",
        "retention:run_retention",
        description="`retention apply TENANT` purges the state of checkpoint records past "
        "the policy: --older-than DAYS (recorded that long before now) and/or "
        "--keep-latest K (all but the latest K per session and per namespace of a thread; "
        "given both, a record goes only when both let it go). Never purged: a subject "
        "under legal hold (`eventlog hold`), a session or thread with an open interrupt "
        "batch or an unresolved effect, a blob a retained record references. The events "
        "stay (the chain verifies); each pass is recorded on the tenant's retention "
        "stream with its policy and the ids it purged, in bounded batches of one "
        "transaction each. --dry-run prints the same plan and writes nothing. "
        "--policy FILE (JSON, or TOML by its .toml suffix: a table `tenants`, each with "
        "older_than_days and/or keep_latest) applies many tenants' policies at once.",
    )
    retention.add_argument("action", choices=("apply",), help="what to do: apply")
    retention.add_argument("tenant", nargs="?", metavar="TENANT",
                           help="the tenant (not with --policy)")
    retention.add_argument("--older-than", type=float, metavar="DAYS",
                           help="purge records recorded more than DAYS days ago")
    retention.add_argument("--keep-latest", type=positive_int, metavar="K",
                           help="keep the latest K records per session and thread namespace")
    retention.add_argument("--policy", metavar="FILE",
                           help="a JSON or TOML file of policies by tenant")
    retention.add_argument("--dry-run", action="store_true",
                           help="print what the pass would purge; write nothing")
    retention.add_argument("--batch-size", type=positive_int, metavar="N", default=500,
                           help="records purged per transaction at most (default 500)")
    hold = add_command(
        commands, common, "hold", "place, release or list legal holds",
        "retention:run_hold",
        description="`hold TENANT SUBJECT` puts a subject (a session or thread id, or a "
        "subject= records name, e.g. a customer id shared by many sessions) under legal "
        "hold: no retention pass purges the session and thread of that id or any session "
        "or thread with a record naming it. `hold --release TENANT SUBJECT` "
        "releases it; `hold --list TENANT` lists the standing holds. Each placement and "
        "release is an event of the tenant's retention stream (who decided is in "
        "--reason).",
    )
    hold.add_argument("tenant", metavar="TENANT", help="the tenant")
    hold.add_argument("subject", nargs="?", metavar="SUBJECT",
                      help="the session or thread id, or a subject= records name")
    hold.add_argument("--reason", default="", metavar="TEXT", help="why (recorded)")
    mode = hold.add_mutually_exclusive_group()
    mode.add_argument("--release", action="store_true", help="release the subject's hold")
    mode.add_argument("--list", action="store_true", help="list the tenant's holds")
