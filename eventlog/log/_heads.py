"""The stream-head cache: the (version, hash) an append chains onto, without a read."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

Head = tuple[int, bytes]
"""A stream's last version and that event's hash."""

DEFAULT_SIZE = 10_000


class HeadCache:
    """The heads of the streams this log appended to most recently (least recent evicted).

    A cached head may be stale (another writer appended since): the append then meets a
    version race, drops the entry and reads the head afresh with ``fresh=True``.
    """

    def __init__(
        self,
        read: Callable[[str, str], Awaitable[Head | None]],
        read_many: Callable[[list[tuple[str, str]]], Awaitable[dict[tuple[str, str], Head]]],
        size: int = DEFAULT_SIZE,
    ) -> None:
        self._read = read
        self._read_many = read_many
        self._size = size
        self._heads: OrderedDict[tuple[str, str], Head] = OrderedDict()

    async def get(
        self, tenant_id: str, stream_id: str, *, fresh: bool, new: bool = False
    ) -> Head | None:
        """The stream's head, from the cache unless ``fresh`` or unknown; None if empty.

        A ``new`` stream (the caller expects it empty: ``NO_STREAM``) that is not cached is
        taken to be empty without a read; if it is not, the append meets a version race,
        which re-reads it ``fresh`` and reports the conflict.
        """
        key = (tenant_id, stream_id)
        if not fresh and key in self._heads:
            self._heads.move_to_end(key)
            return self._heads[key]
        if new and not fresh:
            return None
        head = await self._read(tenant_id, stream_id)
        if head is None:
            self._heads.pop(key, None)
        else:
            self.remember(tenant_id, stream_id, head)
        return head

    async def get_many(
        self, keys: list[tuple[str, str]], *, fresh: bool,
        new: frozenset[tuple[str, str]] = frozenset(),
    ) -> dict[tuple[str, str], Head | None]:
        """The heads of many streams: cached ones unless ``fresh``, the rest in one read
        (those in ``new`` not cached are taken to be empty, as `get` does)."""
        found: dict[tuple[str, str], Head | None] = {}
        missing = []
        for key in keys:
            if not fresh and key not in self._heads and key in new:
                found[key] = None
            elif not fresh and key in self._heads:
                self._heads.move_to_end(key)
                found[key] = self._heads[key]
            else:
                missing.append(key)
        if missing:
            read = await self._read_many(missing)
            for key in missing:
                head = found[key] = read.get(key)
                if head is None:
                    self._heads.pop(key, None)
                else:
                    self.remember(*key, head)
        return found

    def remember(self, tenant_id: str, stream_id: str, head: Head) -> None:
        """Record the head an append of ours ended at."""
        self._heads[(tenant_id, stream_id)] = head
        self._heads.move_to_end((tenant_id, stream_id))
        if len(self._heads) > self._size:
            self._heads.popitem(last=False)

    def forget(self, tenant_id: str, stream_id: str) -> None:
        """Drop a head that proved stale."""
        self._heads.pop((tenant_id, stream_id), None)


def version(head: Head | None) -> int:
    """The version a head stands at (0: no stream)."""
    return 0 if head is None else head[0]
