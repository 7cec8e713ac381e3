"""The ``eventlog`` command: a demo of the library and forensic tools over any log.

Every command parses its arguments, calls the library's public API and renders the
result: tables and trees for people (colour only on a terminal), ``--json`` for scripts.
Exit statuses are documented in `eventlog.cli.app.EXIT_STATUSES`.
"""

from eventlog.cli.app import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_OPERATIONAL,
    EXIT_USAGE,
    build_parser,
    main,
)

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_OK",
    "EXIT_OPERATIONAL",
    "EXIT_USAGE",
    "build_parser",
    "main",
]
