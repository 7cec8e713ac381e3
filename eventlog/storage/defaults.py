"""Opt-in implementations of some contract methods, for the backends they fit.

The contracts in `eventlog.storage.contracts` are fully abstract, so a backend that
forgets a method cannot be built (``TypeError`` naming it) rather than failing when the
method is first called. These mixins are the defaults the single contract used to
carry, each named for the backends it is right for; put a mixin before the contracts in
the class's bases, and override any method it gives that you can do better.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from eventlog.errors import StorageError
from eventlog.storage.contracts.blobs import BlobStorage
from eventlog.storage.contracts.events import EventStorage
from eventlog.storage.requests import AppendRequest


async def heads_one_by_one(
    storage: EventStorage, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[int, bytes]]:
    """`EventStorage.stream_heads` asked of `EventStorage.stream_head` one stream at a time."""
    heads = {}
    for tenant_id, stream_id in keys:
        head = await storage.stream_head(tenant_id, stream_id)
        if head is not None:
            heads[(tenant_id, stream_id)] = head
    return heads


class OneWriter(EventStorage):
    """For a backend that commits one writer at a time (SQLite, a file): log order is
    position order, so everything committed is readable at once, and each stream head
    is read on its own."""

    async def wait_readable(self, max_wait: float) -> bool:
        """True at once: with one writer, positions are assigned in commit order."""
        return True

    async def stream_heads(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[int, bytes]]:
        """Each stream's head by `stream_head`, one stream at a time."""
        return await heads_one_by_one(self, keys)


class InProcess(OneWriter):
    """For a backend held by one process whose appends never await between reading a
    stream's head and committing (``memory://``, ``file://``): nothing can commit in
    between, so reading the head and appending is already atomic, and the caller's own
    lock is all a hold needs."""

    async def append_at_head(
        self, tenant_id: str, stream_id: str,
        build: Callable[[tuple[int, bytes] | None], AppendRequest],
    ) -> tuple[AppendRequest, list[int]]:
        """Read the stream's head, then append what ``build`` makes of it."""
        request = build(await self.stream_head(tenant_id, stream_id))
        return request, await self.append(request)

    @asynccontextmanager
    async def hold_stream(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        """Holds nothing: within one process, the caller's own lock suffices."""
        yield


class NoBatches(EventStorage):
    """For a backend with no transaction over several streams: a batch of one is an
    append, a longer batch is refused with `StorageError` naming the method."""

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Commit a batch of one with `append`; refuse more."""
        if len(requests) != 1:
            raise StorageError(self.name, "append", "this backend has no batched append "
                               "(EventStorage.append_batch)")
        return [await self.append(requests[0])]


class BlobsByDigest(BlobStorage):
    """For a backend that reads one blob at a time: the many-digest reads ask
    `get_blob` for each digest (duplicates once)."""

    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        """The bytes of each of ``digests`` that exists, by `get_blob`."""
        found: dict[bytes, bytes] = {}
        for digest in dict.fromkeys(digests):
            data = await self.get_blob(tenant_id, digest)
            if data is not None:
                found[digest] = data
        return found

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        """The length of each of ``digests`` that exists, read by `get_blob` one blob at
        a time (so one blob at a time is held)."""
        sizes: dict[bytes, int] = {}
        for digest in dict.fromkeys(digests):
            data = await self.get_blob(tenant_id, digest)
            if data is not None:
                sizes[digest] = len(data)
        return sizes
