"""The command line of ``completion`` and its hidden helper, declared without
`eventlog.cli.completion` (imported when the command runs: its handlers are named
``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import SharedOptions, add_command, lazy_handler

SHELLS = ("bash", "zsh", "fish")
HIDDEN = "__complete"
"""The command the scripts call for names from the log (not listed in the help)."""
KINDS = ("tenants", "sessions", "batches")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``completion`` and the hidden command its scripts call."""
    parser = add_command(
        commands, common, "completion", "print a shell completion script", "completion:run",
        description="Print a completion script for bash, zsh or fish. Load it from your "
        "shell's start-up file, e.g. `eval \"$(eventlog completion bash)\"` in ~/.bashrc, "
        "`eval \"$(eventlog completion zsh)\"` in ~/.zshrc, or "
        "`eventlog completion fish > ~/.config/fish/completions/eventlog.fish`. Tenants, "
        "sessions, threads and batches are completed from the log the command line names.",
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    parents = common.parents_for(HIDDEN) if isinstance(common, SharedOptions) else [common]
    hidden = commands.add_parser(HIDDEN, parents=parents, description="names for completion")
    hidden.add_argument("kind", choices=KINDS, help="what to list")
    hidden.add_argument("tenant", nargs="?", help="the tenant (sessions and batches)")
    hidden.set_defaults(handler=lazy_handler("completion:run_candidates"))

