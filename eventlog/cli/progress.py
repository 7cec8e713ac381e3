"""Progress for long reads: count the events a library call reads through ``read_all``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from eventlog.log import EventLog
from eventlog.records import LogPage, RecordedEvent


class CountingLog:
    """An `EventLog` stand-in that reports how many events each ``read_all`` returned.

    Library functions that read the whole log (`projections.rebuild`,
    `projections.compare_views`) take the log; handing them this instead lets a command
    drive a progress bar without the library knowing about one.
    """

    def __init__(
        self, log: EventLog, advance: Callable[[int], None],
        seen: Callable[[list[RecordedEvent]], None] | None = None,
    ) -> None:
        self._log = log
        self._advance = advance
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)

    async def read_all(
        self, after: str | None = None, limit: int = 500, tenant_id: str | None = None
    ) -> LogPage:
        """`EventLog.read_all`, reporting the page's size."""
        page = await self._log.read_all(after=after, limit=limit, tenant_id=tenant_id)
        self._advance(len(page.events))
        if self._seen is not None:  # e.g. verify collecting the events that do not decode
            self._seen(page.events)
        return page

    def as_log(self) -> EventLog:
        """This stand-in, typed as the log it stands in for."""
        return cast(EventLog, self)
