"""The command line of ``export`` and ``import``, declared without `eventlog.cli.transfer`
(imported when the command runs: its handlers are named ``"MODULE:FUNCTION"``).
"""

from __future__ import annotations

import argparse
from typing import Any

from eventlog.cli.context import add_command
from eventlog.cli.options import DEFAULT_TIMEOUT_S, non_negative_float
from eventlog.cli.parsers import adoption


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``export`` and ``import``."""
    export = add_command(
        commands, common, "export", "write a tenant's (or one session's) log to a file",
        "transfer:run_export",
        description="Write a tenant's events (or one session's or framework thread's: its "
        "checkpoints, pending writes and interrupt batches) to FILE as JSON Lines: events "
        "byte-identical with their ids, versions, times and hashes, and the state blobs they "
        "name unless --without-state. "
        "FILE - writes to standard output. "
        "On PostgreSQL an event is readable in log order only once every transaction "
        "older than its writer has ended: the export first waits up to --max-wait for "
        "the transactions running at its start, then checks that it read every stream "
        "up to the version it held then. If a transaction left open hides some, it "
        "exits 3 and leaves no FILE (standard output gets no end record, so an import "
        "refuses it as truncated). "
        "`export langgraph TARGET` writes the tenant's LangGraph threads into LangGraph's own "
        "saver instead (TARGET: postgresql://… or sqlite:///path or a path; its tables are "
        "set up), and `export maf DIR` its Agent Framework workflows into a "
        "FileCheckpointStorage directory, through the framework's own API, skipping the "
        "checkpoints already there.",
    )
    export.add_argument("--tenant", required=True, metavar="T", help="the tenant to export")
    export.add_argument("--session", metavar="S",
                        help="only this session or framework thread (LangGraph, Agent "
                             "Framework), with the payloads it holds")
    export.add_argument("--without-state", action="store_true",
                        help="leave the checkpoint state blobs out (events only)")
    export.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    export.add_argument("--max-wait", type=non_negative_float, metavar="SECONDS",
                        default=DEFAULT_TIMEOUT_S,
                        help="how long to wait for open PostgreSQL transactions to end "
                             f"before giving up (default {DEFAULT_TIMEOUT_S:g})")
    export.add_argument("file", metavar="FILE",
                        help="the JSON Lines file to write (- for stdout); or langgraph or "
                             "maf, followed by TARGET")
    export.add_argument("target", metavar="TARGET", nargs="?",
                        help="after langgraph: the saver's database URL or path; after maf: "
                             "the file store's directory")
    adoption.add_selection(export)
    imported = add_command(
        commands, common, "import", "append an exported file's events to this log",
        "transfer:run_import",
        description="Append the events of an export FILE to the log at --url, as they are "
        "(same ids, versions, times and hashes: the chains verify in the copy), folding "
        "the views afresh. Streams the log already holds are skipped, so importing the "
        "same file twice changes nothing; a stream whose history differs is refused "
        "before anything is written (exit status 1). A file that is damaged, or holds an "
        "event that does not decode as its type (or, of a type this command does not "
        "know, is not a JSON object), is refused whole (exit status 2). The state that a "
        "file exported --without-state left out is recorded in the log as withheld: "
        "`eventlog verify` reports it as a notice, not a finding.",
    )
    imported.add_argument("file", metavar="FILE", help="the export file to read")
