"""Event types used by the tests: `Noted` ships in `eventlog.testing` with the contract suite."""

from __future__ import annotations

from eventlog.testing.events import Noted

__all__ = ["Noted"]
