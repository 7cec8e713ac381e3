"""The command line of ``migrate``, ``stats`` and ``cleanup``, declared without
`eventlog.cli.admin` (imported when the command runs: its handlers are named
``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``migrate``, ``stats`` and ``cleanup``."""
    add_command(
        commands, common, "migrate", "bring the database's schema up to date", "admin:run_migrate",
        description="Create or upgrade the log's tables (serialized across processes) and "
        "show the schema revision. A database stamped with a revision this version does not "
        "know is refused.",
    )
    stats = add_command(
        commands, common, "stats",
        "count events, streams, sessions, threads, runs, batches, blob bytes", "admin:run_stats",
        description="Per tenant: events, streams, sessions with checkpoints, checkpoints, "
        "runs, open and unresolved interrupt batches, the bytes of live state blobs, and "
        "the framework threads (LangGraph, Agent Framework) with their checkpoints and the "
        "bytes of their live payloads (state, channel values, pending writes).",
    )
    stats.add_argument("--tenant", metavar="T", help="only this tenant")
    cleanup = add_command(
        commands, common, "cleanup", "run one bounded interrupt maintenance pass",
        "admin:run_cleanup",
        description="One bounded pass of the interrupt store's maintenance: expire leases "
        "(back to pending, or unresolved after an effect), expire unanswered batches, "
        "abandon captures under dead claims, retire finished batches past the audit "
        "retention from the views. Never resolves an unresolved effect. Prints the counts.",
    )
    cleanup.add_argument("--limit", type=positive_int, metavar="N",
                         help="batches per category in this pass (default: the store's 100)")
