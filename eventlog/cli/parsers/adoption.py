"""The command line of ``adopt``, declared without `eventlog.cli.adoption` (imported when
the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``adopt``."""
    adopt = add_command(
        commands, common, "adopt",
        "bring LangGraph or Agent Framework checkpoints into the log",
        "adoption:run_adopt",
        description="Adopt a tenant's threads from LangGraph's savers (SOURCE: "
        "postgresql://… for PostgresSaver and AsyncPostgresSaver, sqlite:///path or a path "
        "for SqliteSaver) or Agent Framework's FileCheckpointStorage (SOURCE: its "
        "directory) into the log at --url, read through the framework's own saver API. "
        "Each thread's checkpoints (ids, parents, metadata, values, pending writes, every "
        "namespace) become the events the adapters write, marked as adopted from SOURCE "
        "with their original times. Running it again adopts only what is new. A SOURCE "
        "that is not what it claims is refused (exit status 2) with nothing written; a "
        f"checkpoint that does not load is named, what came before it stays. Needs "
        f"`{INSTALL}`.",
    )
    adopt.add_argument("framework", choices=FRAMEWORKS, metavar="FRAMEWORK",
                       help="langgraph or maf (Agent Framework)")
    adopt.add_argument("source", metavar="SOURCE",
                       help="the saver's database URL or path (langgraph), the file "
                            "store's directory (maf)")
    adopt.add_argument("--tenant", required=True, metavar="T",
                       help="the tenant the threads are adopted into")
    add_selection(adopt)
    adopt.add_argument("--dry-run", action="store_true",
                       help="say what would be adopted, write nothing")


FRAMEWORKS = ("langgraph", "maf")
"""What ``adopt`` takes in and ``export`` writes out besides our own file format."""


INSTALL = 'pip install "checkpoint-eventlog[adopt]"'


def add_selection(parser: argparse.ArgumentParser) -> None:
    """``--thread`` (LangGraph) and ``--workflow`` (Agent Framework), each repeatable; and
    ``--allow-type``, the types the values may name beyond the framework's safe ones."""
    parser.add_argument("--thread", action="append", metavar="ID",
                        help="only this LangGraph thread (repeat for more)")
    parser.add_argument("--workflow", action="append", metavar="NAME",
                        help="only this Agent Framework workflow (repeat for more)")
    parser.add_argument("--allow-type", action="append", metavar="MODULE:NAME",
                        help="a type the values may name and that is built when they load, "
                             "beyond the framework's safe types (LangGraph's strict list; "
                             "Agent Framework's); repeat for more. A value naming any other "
                             "type is refused, nothing of it run. Building a type runs its "
                             "code: name only types of a store you trust")
