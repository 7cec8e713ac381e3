"""The ``eventlog`` command: a demo of the library and forensic tools over any log.

Every command parses its arguments, calls the library's public API and renders the
result: tables and trees for people (colour only on a terminal), ``--json`` for scripts.
Exit statuses are documented in `eventlog.cli.app.EXIT_STATUSES`.

`main` and `build_parser` are loaded from `eventlog.cli.app` on first use (PEP 562), so
importing one module of the command (its errors, its options) loads no other command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventlog.cli.errors import EXIT_FINDINGS, EXIT_NOTHING, EXIT_OK, EXIT_OPERATIONAL, EXIT_USAGE

if TYPE_CHECKING:
    from eventlog.cli.app import build_parser as build_parser
    from eventlog.cli.app import main as main

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_NOTHING",
    "EXIT_OK",
    "EXIT_OPERATIONAL",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

if not TYPE_CHECKING:  # type checkers read the imports above

    def __getattr__(name: str) -> Any:
        if name not in ("build_parser", "main"):
            raise AttributeError(f"module 'eventlog.cli' has no attribute {name!r}")
        from eventlog.cli import app

        return getattr(app, name)
