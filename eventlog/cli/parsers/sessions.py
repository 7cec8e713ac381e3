"""The command line of ``timeline`` and ``inspect``, declared without
`eventlog.cli.sessions` (imported when the command runs: its handlers are named
``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``timeline`` and ``inspect``."""
    timeline = add_command(
        commands, common, "timeline", "one session's or framework thread's story in time order",
        "sessions:run_timeline",
        description="One session's story in log order: its runs and checkpoints "
        "(duplicates marked), its interrupt batches with claims (by generation, never a "
        "token), effects, captures, finishes, reconciliations, and tombstones. A LangGraph or "
        "Agent Framework thread is told in its framework's words: steps and their source, "
        "the nodes (executors) that ran, channels (state) changed, each question with its "
        "answer, forks, subgraph lanes, steps that never finished, deletions and copies; "
        "then its tree of checkpoints.",
    )
    timeline.add_argument("tenant", metavar="TENANT", help="the tenant the session or thread is in")
    timeline.add_argument("session", metavar="SESSION|THREAD",
                          help="the session, or the LangGraph thread or Agent Framework "
                               "workflow, to tell")
    timeline.add_argument(
        "--scan", action="store_true",
        help="find the session's batches by reading the tenant's whole log (also finds "
             "batches retired from the views)",
    )
    inspect = add_command(
        commands, common, "inspect",
        "one interrupt batch and its audit trail, or one checkpoint of a thread",
        "sessions:run_inspect",
        description="One interrupt batch: state, lease, effect, capture outcome, "
        "reconciliation, its interrupts and its whole audit trail (never a token). Or one "
        "checkpoint of a LangGraph or Agent Framework thread: its step, the nodes that ran, "
        "its values pretty-printed, what changed since its parent, its pending writes and "
        "questions (the thread's last checkpoint unless --checkpoint names one).",
    )
    inspect.add_argument("tenant", metavar="TENANT", help="the tenant the batch or thread is in")
    inspect.add_argument("batch", metavar="BATCH|THREAD",
                         help="the interrupt batch's id, or a thread to show one checkpoint of")
    inspect.add_argument("--checkpoint", metavar="ID",
                         help="this checkpoint of the thread (default: its last one put)")
    inspect.add_argument("--namespace", metavar="NS",
                         help="the checkpoint's namespace (a subgraph's checkpoint_ns; "
                              "default: wherever the id is found)")
