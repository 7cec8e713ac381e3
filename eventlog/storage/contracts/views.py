"""The view contract: the rows the log's projections keep, read back.

View rows change only inside an append (`AppendRequest.changes`), in the event contract's
transaction; this contract answers queries over them.
"""

from __future__ import annotations

import abc
from typing import Any

from eventlog.storage.contracts.lifecycle import StorageLifecycle
from projections.query import ViewQuery
from projections.thread_history import HistoryQuery, HistoryRow


class ViewStorage(StorageLifecycle):
    """Reads of the view tables. Every method is abstract."""

    @abc.abstractmethod
    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        """Rows of one view table answering ``query``, as plain dicts."""

    @abc.abstractmethod
    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        """Every view table's rows, sorted by primary key (for comparison with a rebuild)."""

    @abc.abstractmethod
    async def history(self, query: HistoryQuery) -> list[HistoryRow]:
        """The rows of a thread checkpoint's channel history, of the query's tenant only
        (`projections.thread_history`): one statement on SQL backends, whatever the
        depth of the walk."""
