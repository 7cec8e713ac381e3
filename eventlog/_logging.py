"""How the library logs: quietly, through whatever logging the host program set up.

Every module logs with ``logger = get_logger(__name__)`` and structlog's calling style
(``logger.info("deleted", tenant=..., checkpoints=...)``). Where the event goes is decided
at each call, never by configuring anything:

- a host that configured structlog (``structlog.configure``, or ``capture_logs`` in tests)
  gets the event through structlog, with its key/values, as before;
- otherwise it goes to the standard-library logger of the module's name (``eventlog.log``,
  ``eventlog.checkpoints.threads`` …), which by default shows WARNING and worse on standard
  error and nothing below. ``logging.basicConfig(level=logging.DEBUG)`` (or a level on the
  ``eventlog`` logger) shows the rest. The record's message is ``event key=value …``;
  ``record.structured`` holds the event and its values as a dict.

An unconfigured structlog would print every debug event on standard output, which broke
a host that spoke a protocol over its stdout.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog


class LibraryLogger:
    """A logger with structlog's methods that routes each event as described above."""

    __slots__ = ("_stdlib", "_structlog")

    def __init__(self, name: str) -> None:
        self._stdlib = logging.getLogger(name)
        self._structlog = structlog.get_logger(name)

    def debug(self, event: str, **values: Any) -> None:
        self._log(logging.DEBUG, "debug", event, values)

    def info(self, event: str, **values: Any) -> None:
        self._log(logging.INFO, "info", event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._log(logging.WARNING, "warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._log(logging.ERROR, "error", event, values)

    def _log(self, level: int, method: str, event: str, values: dict[str, Any]) -> None:
        if structlog.is_configured():
            getattr(self._structlog, method)(event, **values)
        elif self._stdlib.isEnabledFor(level):
            rendered = " ".join(f"{key}={value!r}" for key, value in values.items())
            self._stdlib.log(level, "%s %s", event, rendered, stacklevel=3,
                             extra={"structured": {"event": event, **values}})


def get_logger(name: str) -> LibraryLogger:
    """The library logger for module ``name``."""
    return LibraryLogger(name)
