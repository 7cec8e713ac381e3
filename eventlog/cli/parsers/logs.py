"""The command line of ``log``, declared without `eventlog.cli.logs` (imported when the
command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import TIME_HELP, non_negative_float, positive_int, time_moment


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``log``."""
    parser = add_command(
        commands, common, "log", "show events in log order, filtered; --follow tails them",
        "logs:run",
        description="Show events in log order (like `git log`), oldest first. Filters "
        "combine. With --follow, keep printing events as they commit (gap-safe).",
    )
    parser.add_argument("--tenant", metavar="T", help="only this tenant's events")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--stream", metavar="S", help="only this stream (needs --tenant)")
    which.add_argument(
        "--session", metavar="S",
        help="only this session or framework thread (LangGraph, Agent Framework): its "
             "checkpoints, pending writes and interrupt batches (needs --tenant)",
    )
    parser.add_argument(
        "--type", metavar="TYPE", action="append", dest="types",
        help="only events of this type (repeat for several)",
    )
    parser.add_argument(
        "--actor", metavar="NAME", action="append", dest="actors",
        help="only events appended by this principal (repeat for several); events that "
             "name nobody never match",
    )
    parser.add_argument("--from-position", type=positive_int, metavar="N",
                        help="only events at position N or later")
    parser.add_argument("--to-position", type=positive_int, metavar="N",
                        help="only events at position N or earlier")
    parser.add_argument("--since", type=time_moment, metavar="TIME",
                        help=f"only events recorded at or after TIME: {TIME_HELP}")
    parser.add_argument("--until", type=time_moment, metavar="TIME",
                        help="only events recorded at or before TIME (as --since)")
    parser.add_argument("--full", action="store_true",
                        help="show every field of every event whole (lines may wrap); by "
                             "default lines fit the terminal and say how many fields they "
                             "leave out")
    parser.add_argument("--limit", type=positive_int, metavar="N",
                        help="stop after N events")
    parser.add_argument("--follow", "-f", action="store_true",
                        help="print events as they commit, from now on (as tail -f), until "
                             "interrupted or --max-wait")
    parser.add_argument("--from-start", action="store_true",
                        help="with --follow: first print the events already there (implied "
                             "by --from-position and --since)")
    parser.add_argument("--poll-interval", type=non_negative_float, default=0.5,
                        metavar="SECONDS", help="with --follow: how often to look (0.5)")
    parser.add_argument("--max-wait", type=non_negative_float, metavar="SECONDS",
                        help="with --follow: stop after SECONDS without a new event")
