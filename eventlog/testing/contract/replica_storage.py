"""Contract: a backend whose database a hot standby follows (`ReplicaStorage`): a log
opened with ``read_url`` reads from the standby, caught up with the primary's mark."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from eventlog import EventLog
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted


class ReplicaStorageCalls(ContractBase):
    """Contract: `ReplicaStorage`'s two methods, and the reads they make safe.

    One more hook: ``replica_url(self, tmp_path) -> str`` (required), the URL of a hot
    standby of the database ``backend_url`` names. The ``replicated`` fixture is a log
    on the primary (in the store ``backend_url`` and ``open_options`` name) reading
    from the standby.
    """

    def replica_url(self, tmp_path: Path) -> str:
        """The URL of a hot standby of the database `backend_url` names."""
        raise NotImplementedError(f"{type(self).__name__} must define replica_url(tmp_path)")

    @pytest_asyncio.fixture(loop_scope="function")
    async def replicated(
        self, backend: ContractBackend, tmp_path: Path
    ) -> AsyncIterator[EventLog]:
        """A log on a fresh store of the primary, reading from the standby."""
        async with backend.open():
            pass  # the store exists before the standby is asked to follow it
        async with backend.open(read_url=self.replica_url(tmp_path)) as opened:
            yield opened

    async def test_the_standby_replays_up_to_the_primarys_mark(
        self, replicated: EventLog
    ) -> None:
        """After an append, the primary's `replication_mark` is a string the standby's
        `wait_replayed` reaches."""
        await replicated.append("t", "s", [Noted(text="a")])
        # Typed as what open_log needs (events, blobs, views); these two are optional.
        primary: Any = replicated.storage
        standby: Any = replicated.reader
        mark = await primary.replication_mark()
        assert isinstance(mark, str)
        assert await standby.wait_replayed(mark, 30.0)

    async def test_reads_from_the_standby_see_every_append(self, replicated: EventLog) -> None:
        """Once `wait_readable` is True, the standby serves what the primary committed."""
        await replicated.append("t", "s", [Noted(text="a"), Noted(text="b")])
        await replicated.append("t", "other", [Noted(text="c")])
        assert replicated.reader is not replicated.storage
        assert await replicated.wait_readable(30.0)
        page = await replicated.read_all(tenant_id="t")
        texts = [event.event.text async for event in replicated.read_stream("t", "s")]  # type: ignore[attr-defined]
        assert (["a", "b"], 3) == (texts, len(page.events))
