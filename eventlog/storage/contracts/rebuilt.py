"""The optional contract of a backend that keeps its views in memory only: `open_log`
rebuilds them from its events each time it opens."""

from __future__ import annotations

import abc
from collections.abc import Iterable

from eventlog.records import StoredEvent
from eventlog.storage.contracts.views import ViewStorage
from projections.memory import ViewTables


class ViewsRebuiltOnOpen(ViewStorage):
    """Views held in memory, not stored: once the backend is open, `open_log` folds
    `stored_events` through the log's projections and hands the tables to
    `install_views`. The file backend is one; a backend whose views are durable (or, like
    ``memory://``, start empty with the log) does not implement it."""

    @abc.abstractmethod
    def stored_events(self) -> Iterable[StoredEvent]:
        """Every event in log order, as the backend loaded it when it opened."""

    @abc.abstractmethod
    def install_views(self, tables: ViewTables) -> None:
        """Replace the views with ``tables``, which are folded from `stored_events`."""
