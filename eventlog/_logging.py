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

structlog is not imported by the library: a host that configured it has imported it, so an
event looks for it in ``sys.modules`` (importing it would import ``rich`` too, ~80 ms of
every process's start-up).

A call below the level a host shows costs a check, not a rendering: with structlog
configured, the bound logger is built once per configuration (structlog's lazy proxy
would bind anew on every call) and asked ``is_enabled_for`` before the event is passed.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType


class LibraryLogger:
    """A logger with structlog's methods that routes each event as described above."""

    __slots__ = ("_bound", "_bound_for", "_name", "_stdlib")

    def __init__(self, name: str) -> None:
        self._name = name
        self._stdlib = logging.getLogger(name)
        self._bound: Any = None
        self._bound_for: tuple[Any, ...] = ()

    def debug(self, event: str, **values: Any) -> None:
        self._log(logging.DEBUG, "debug", event, values)

    def info(self, event: str, **values: Any) -> None:
        self._log(logging.INFO, "info", event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._log(logging.WARNING, "warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._log(logging.ERROR, "error", event, values)

    def _log(self, level: int, method: str, event: str, values: dict[str, Any]) -> None:
        structlog = _configured_structlog()
        if structlog is not None:
            bound = self._structlog_logger(structlog)
            enabled = getattr(bound, "is_enabled_for", None)
            if enabled is None or enabled(level):
                getattr(bound, method)(event, **values)
        elif self._stdlib.isEnabledFor(level):
            rendered = " ".join(f"{key}={value!r}" for key, value in values.items())
            self._stdlib.log(level, "%s %s", event, rendered, stacklevel=3,
                             extra={"structured": {"event": event, **values}})

    def _structlog_logger(self, structlog: ModuleType) -> Any:
        """structlog's logger for this name, bound once per configuration."""
        config = structlog.get_config()
        key = (config["wrapper_class"], config["logger_factory"], id(config["processors"]),
               config["context_class"])
        if key != self._bound_for:
            self._bound = structlog.get_logger(self._name).bind()
            self._bound_for = key
        return self._bound


def _configured_structlog() -> ModuleType | None:
    """structlog when the host imported and configured it, else None."""
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        return structlog
    return None


def get_logger(name: str) -> LibraryLogger:
    """The library logger for module ``name``."""
    return LibraryLogger(name)
