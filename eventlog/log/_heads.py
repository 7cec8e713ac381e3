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
        self, read: Callable[[str, str], Awaitable[Head | None]], size: int = DEFAULT_SIZE
    ) -> None:
        self._read = read
        self._size = size
        self._heads: OrderedDict[tuple[str, str], Head] = OrderedDict()

    async def get(self, tenant_id: str, stream_id: str, *, fresh: bool) -> Head | None:
        """The stream's head, from the cache unless ``fresh`` or unknown; None if empty."""
        key = (tenant_id, stream_id)
        if not fresh and key in self._heads:
            self._heads.move_to_end(key)
            return self._heads[key]
        head = await self._read(tenant_id, stream_id)
        if head is None:
            self._heads.pop(key, None)
        else:
            self.remember(tenant_id, stream_id, head)
        return head

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
