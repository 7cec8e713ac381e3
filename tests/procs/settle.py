"""`settle` ships in `eventlog.testing` with the contract suite; imported from there."""

from __future__ import annotations

from eventlog.testing.helpers import settle

__all__ = ["settle"]
