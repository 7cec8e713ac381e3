"""The command line of ``replay``, declared without `eventlog.cli.replay` (imported when
the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import TIME_HELP, when_moment

DEFAULT_TABLES = ("checkpoint_sessions", "checkpoint_runs", "checkpoints", "interrupt_batches",
                  "thread_checkpoints", "thread_writes")
"""The views shown unless --table says otherwise, by name (`eventlog.cli.replay` names
them from the projections; a test holds the two equal)."""
OTHER_TABLES = ("stream_heads", "thread_channel_values")
"""The other views --table may name."""


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``replay``."""
    parser = add_command(
        commands, common, "replay", "show the views as they stood at a past position or time",
        "replay:run",
        description="Rebuild the session, run, interrupt and framework-thread (LangGraph, "
        "Agent Framework) views from the log alone (into a temporary file), as they stood at "
        "a log position or a time, and show them. Nothing is written.",
    )
    parser.add_argument(
        "--as-of", required=True, type=when_moment, metavar="POSITION|TIME",
        help=f"a log position (e.g. 120) or {TIME_HELP}",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's rows")
    parser.add_argument("--session", metavar="S",
                        help="only this session's or framework thread's rows (needs --tenant)")
    parser.add_argument("--table", action="append", dest="tables", metavar="NAME",
                        help=f"views to show (repeatable; default: {', '.join(DEFAULT_TABLES)};"
                             f" also {', '.join(OTHER_TABLES)})")
