"""The blob contract: content-addressed payloads, counted by the events that hold them.

A blob is written (or its count raised) and released (its count lowered; deleted at zero)
only inside an append (`AppendRequest.blob_adds` and ``blob_releases``), so the event
contract's transaction covers it; this contract reads blobs and their counts back. A
blob of at most `eventlog.hashing.TOLD_BY_DIGEST` bytes comes with a count of 0:
stored if absent, never counted, never released nor deleted (its count reads back as 0).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

from eventlog.storage.contracts.lifecycle import StorageLifecycle


class BlobStorage(StorageLifecycle):
    """Reads of the blobs a backend stores with its appends. Every method is abstract;
    `eventlog.storage.defaults.BlobsByDigest` derives the many-digest reads from
    `get_blob` for a backend that has nothing faster."""

    @abc.abstractmethod
    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        """A blob's bytes by (tenant, digest), or None when absent or purged."""

    @abc.abstractmethod
    async def get_blobs(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, bytes]:
        """The bytes of those of ``digests`` that exist in the tenant, by digest."""

    @abc.abstractmethod
    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        """The stored length in bytes of those of ``digests`` that exist in the tenant:
        verify reads blobs in pages bounded by their bytes."""

    @abc.abstractmethod
    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        """Every blob of the tenant and its reference count (`EventLog.blob_refs`)."""

    @abc.abstractmethod
    async def blob_refs_page(
        self, tenant_id: str, after: bytes, limit: int
    ) -> list[tuple[bytes, int]]:
        """Up to ``limit`` (digest, reference count) pairs of the tenant's blobs whose
        digest sorts after ``after`` (bytewise), in digest order: verify pages through
        every blob with it, holding one page at a time."""
