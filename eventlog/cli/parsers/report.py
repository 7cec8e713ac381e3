"""The command line of ``report``, declared without `eventlog.cli.report` (imported when
the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int, when_moment


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``report``."""
    parser = add_command(
        commands, common, "report", "write the incident report: one self-contained HTML file",
        "report:run",
        description="Write one HTML file (no network needed: styles, drawing and script are "
        "inside it) showing a session's runs and interrupt batches, or a LangGraph thread's "
        "or Agent Framework workflow's steps (node names, questions and their answers, "
        "forks, subgraphs, unfinished steps), as swimlanes across time, its checkpoint tree "
        "with the at-least-once duplicates, every event with its state and what it changed "
        "(click one for all of it; tokens never appear) and the verify result with the "
        "first broken link highlighted. SESSION may name a thread. Without SESSION: an "
        "index of every session and thread of TENANT (the latest "
        f"{DEFAULT_SESSIONS} drawn); without TENANT: the whole log. Exit status 1 when "
        "verify found a problem (the report is written all the same).",
    )
    parser.add_argument("tenant", metavar="TENANT", nargs="?", help="only this tenant")
    parser.add_argument("session", metavar="SESSION", nargs="?", help="only this session")
    parser.add_argument(
        "--as-of", type=when_moment, metavar="WHEN",
        help="show the log as it stood then: a position or a time (see `replay --help`)",
    )
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write (default: ./eventlog-report-<scope>.html; "
                             "- for standard output)")
    parser.add_argument("--max-sessions", type=positive_int, default=DEFAULT_SESSIONS,
                        metavar="N", help=f"draw at most N sessions ({DEFAULT_SESSIONS}); "
                                          "the index lists every one")


DEFAULT_SESSIONS = 20
