"""The command line of ``consumers``, declared without `eventlog.cli.consumers` (imported
when the command runs: its handler is named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``consumers``."""
    parser = add_command(
        commands, common, "consumers", "list durable consumers with their lag; reset or drop one",
        "consumers:run",
        description="List every durable consumer (log.subscribe, log.project) with its "
        "scope, position, lag (events of its scope after its position, and how long the "
        "oldest of them has waited) and holder. `consumers reset NAME --to START` moves a "
        "consumer back to the beginning (a projection then replays every event), to the "
        "end, or to a cursor, and fences its holder; `consumers drop NAME` forgets it.",
    )
    parser.add_argument("action", nargs="?", choices=("list", "reset", "drop"),
                        default="list", help="list (the default), reset or drop")
    parser.add_argument("name", nargs="?", metavar="NAME", help="the consumer to reset or drop")
    parser.add_argument("--to", metavar="START", default="beginning",
                        help="with reset: beginning (the default), end, or a cursor")
