"""Event types used by the tests: `Noted` and `Holding` ship in `eventlog.testing` with the
contract suite."""

from __future__ import annotations

from eventlog.testing.events import Holding, Noted

__all__ = ["Holding", "Noted"]
