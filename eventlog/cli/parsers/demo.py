"""The command line of ``demo``, declared without `eventlog.cli.demo` (imported when the
command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``demo``."""
    add_command(
        commands, common, "demo", "play an agent workflow on a real log and show what it "
        "recorded", "demo:run",
        description="Play a whole agent workflow through the library's public API — "
        "checkpoints, a crash, a resume with at-least-once duplicates, an approval with a "
        "rejected second answer, a stale worker, one dispatch marker — on the embedded "
        "SQLite file (or --url), then print the session's timeline and verify the log. "
        "Every run is a new session of tenant 'demo'.",
    )
