"""The optional replica contract: a database with hot standbys the log may read from
(``open_log(read_url=…)``), and the one wait both opening and `wait_readable` make."""

from __future__ import annotations

import abc

from eventlog.storage.contracts.lifecycle import StorageLifecycle


class ReplicaStorage(StorageLifecycle):
    """A backend whose database a replica follows: the primary tells where its
    write-ahead log ends, a replica waits until it has replayed that far. Optional: a
    backend without replicas does not implement it (only PostgreSQL does)."""

    @abc.abstractmethod
    async def replication_mark(self) -> str | None:
        """Where this database's write-ahead log ends now (a PostgreSQL LSN), for a
        replica to catch up to; None when there is nothing to wait for."""

    @abc.abstractmethod
    async def wait_replayed(self, mark: str, max_wait: float) -> bool:
        """On a replica, return True once it has replayed everything up to ``mark`` (from
        the primary's `replication_mark`); False if that takes over ``max_wait`` seconds."""


async def caught_up(primary: StorageLifecycle, replica: StorageLifecycle,
                    max_wait: float) -> bool:
    """True once ``replica`` has replayed everything ``primary`` has written so far; False
    if that takes over ``max_wait`` seconds. True at once unless both implement
    `ReplicaStorage` and the primary gives a mark."""
    if not (isinstance(primary, ReplicaStorage) and isinstance(replica, ReplicaStorage)):
        return True
    mark = await primary.replication_mark()
    return mark is None or await replica.wait_replayed(mark, max_wait)
