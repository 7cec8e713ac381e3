"""The command line of ``serve``, declared without `eventlog.cli.serve` (which imports the
``[serve]`` extra's Starlette, uvicorn and Jinja2 when the command runs)."""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import positive_int

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8421


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``serve``."""
    parser = add_command(
        commands, common, "serve", "serve a read-only investigation console over the log",
        "serve:run",
        description="Serve a read-only web console over the log (needs the [serve] extra: "
        "pip install 'checkpoint-eventlog[serve]'): find a tenant's sessions, threads and "
        "interrupt batches, open one (the report's timeline, checkpoint tree, states with "
        "their differences, questions with who asked and who answered), download an "
        "event's inclusion proof that `eventlog check-proof` accepts, and follow a thread "
        "live. Nothing is ever written. Listens on the loopback interface by default; "
        "without --tokens it prints a random access token that sees every tenant; "
        "with --tokens each token sees the tenants its table names.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, metavar="HOST",
                        help=f"the interface to listen on (default {DEFAULT_HOST}: this "
                             "machine only)")
    parser.add_argument("--port", type=positive_int, default=DEFAULT_PORT, metavar="PORT",
                        help=f"the port (default {DEFAULT_PORT}; 0 is not allowed)")
    parser.add_argument("--tokens", metavar="FILE",
                        help="a TOML file of access tokens: one table per name under "
                             "[tokens], with token = \"…\" and tenants = [\"…\"]")
    parser.add_argument("--head", metavar="FILE", action="append", default=[],
                        help="a signed tree head (from `eventlog tree-head`) the console "
                             "proves events under, one per tenant (repeatable)")
