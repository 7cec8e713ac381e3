"""The in-memory backend (``memory://``): plain Python, for tests and notebooks.

An append runs without awaiting, so within one event loop it is atomic by construction.
"""

from __future__ import annotations

import dataclasses
import heapq
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from eventlog import cursors
from eventlog.merkle import Node
from eventlog.records import StoredEvent
from eventlog.storage.base import AppendRequest, StorageBackend, StreamVersionTaken
from eventlog.storage.contracts.consumers import ConsumerRow
from eventlog.storage.contracts.events import NewestEvent
from eventlog.storage.contracts.tree import EMPTY_TREE, TreeExtension, TreeState
from eventlog.storage.defaults import BlobsByDigest, InProcess
from eventlog.storage.memconsumers import InProcessConsumers
from eventlog.storage.memkeys import KeysInMemory
from eventlog.storage.requests import refusal
from eventlog.telemetry import Database
from projections.memory import ViewTables
from projections.query import ViewQuery, read_related
from projections.thread_history import HistoryQuery, HistoryRow, history_rows

REVISION = "memory"


class MemoryBackend(InProcess, BlobsByDigest, KeysInMemory, InProcessConsumers, StorageBackend):
    """Events, blobs and views in dictionaries; gone when the process ends."""

    name = "memory"

    @property
    def database(self) -> Database:
        """The process's own memory: INTERNAL spans, as the conventions say of an
        in-memory database."""
        return Database(system="eventlog.memory", in_memory=True)

    def __init__(self) -> None:
        self.events: list[StoredEvent] = []
        self.streams: dict[tuple[str, str], list[StoredEvent]] = {}
        self.by_id: dict[tuple[str, uuid.UUID], StoredEvent] = {}
        self.blobs: dict[tuple[str, bytes], bytes] = {}
        self.refs: dict[tuple[str, bytes], int] = {}
        self.uncounted: set[tuple[str, bytes]] = set()
        self.views = ViewTables()
        self.tree_states: dict[str, TreeState] = {}
        self.tree_hashes: dict[tuple[str, int, int], bytes] = {}
        self.tree_leaves: dict[tuple[str, uuid.UUID], int] = {}
        self.consumer_rows: dict[str, ConsumerRow] = {}

    async def open(self, *, upgrade: bool) -> str:
        return REVISION

    async def close(self) -> None:
        return None

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        stream = self.streams.get((tenant_id, stream_id))
        return (stream[-1].version, stream[-1].hash) if stream else None

    async def append(self, request: AppendRequest) -> list[int]:
        return self.commit(request)

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        return self.commit_batch(requests)

    def commit_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        """Apply every request or none: all are checked before any is stored."""
        for request in requests:
            self.check(request)
        return [self.store(request) for request in requests]

    def commit(self, request: AppendRequest) -> list[int]:
        """Apply ``request`` synchronously (the file backend calls this after its fsync)."""
        self.check(request)
        return self.store(request)

    def store(self, request: AppendRequest) -> list[int]:
        """Apply ``request`` without checking its versions: the file store replays its log
        through this, so a log with a hole still opens and `verify` can name the hole."""
        stream = self.streams.setdefault((request.tenant_id, request.stream_id), [])
        positions: list[int] = []
        for pending in request.events:
            stored = StoredEvent(
                position=len(self.events) + 1,
                event_id=pending.event_id,
                tenant_id=request.tenant_id,
                stream_id=request.stream_id,
                version=pending.version,
                recorded_at=pending.recorded_at,
                type=pending.type,
                data=pending.data,
                prev_hash=pending.prev_hash,
                hash=pending.hash,
                actor=pending.actor,
                signature=pending.signature,
            )
            self.events.append(stored)
            stream.append(stored)
            self.by_id[(request.tenant_id, stored.event_id)] = stored
            positions.append(stored.position)
        self.views.apply_all((change, positions[index]) for index, change in request.changes)
        self._apply_blobs(request)
        return positions

    def check(self, request: AppendRequest) -> None:
        """Raise `StreamVersionTaken` if ``request`` cannot commit (its requirement's
        `InvalidInput` if a row it requires is not there); change nothing."""
        stream = self.streams.get((request.tenant_id, request.stream_id), [])
        head = stream[-1].version if stream else 0
        if request.events and request.events[0].version != head + 1:
            raise StreamVersionTaken(request.stream_id)
        for required in request.required:
            if not self.views.exists(required.table, required.where):
                raise refusal(required)

    def _apply_blobs(self, request: AppendRequest) -> None:
        for digest, (payload, _count) in request.blob_adds.items():
            self.blobs.setdefault((request.tenant_id, digest), payload)
        for key in self._count_refs(request):
            self.blobs.pop(key, None)

    def _count_refs(self, request: AppendRequest) -> list[tuple[str, bytes]]:
        """Apply the request's reference changes; return the blobs whose count reached 0.

        A blob added with no count (one the digest tells:
        `eventlog.hashing.TOLD_BY_DIGEST`) is kept at 0 and never released."""
        for digest, (_payload, count) in request.blob_adds.items():
            key = (request.tenant_id, digest)
            if count == 0:
                self.uncounted.add(key)
            self.refs[key] = self.refs.get(key, 0) + count
        unreferenced = []
        for digest, count in request.blob_releases.items():
            key = (request.tenant_id, digest)
            if key in self.uncounted:
                continue
            remaining = self.refs.get(key, 0) - count
            if remaining > 0:
                self.refs[key] = remaining
            else:
                self.refs.pop(key, None)
                unreferenced.append(key)
        return unreferenced

    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int, limit: int
    ) -> list[StoredEvent]:
        stream = self.streams.get((tenant_id, stream_id), [])
        start = max(from_version, 1) - 1
        return stream[start : start + limit]

    async def read_all(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> tuple[list[StoredEvent], str | None]:
        last = cursors.decode_position(after)
        page: list[StoredEvent] = []
        for event in self.events[last:]:
            if tenant_id is None or event.tenant_id == tenant_id:
                page.append(event)
                if len(page) == limit:
                    break
        return page, cursors.encode_position(page[-1].position) if page else after

    async def scan_streams(self, tenant_id: str | None, prefix: str = ""
                           ) -> AsyncIterator[StoredEvent]:
        for key in sorted(self.streams):
            if tenant_id in (None, key[0]) and key[1].startswith(prefix):
                for event in list(self.streams[key]):
                    yield event

    async def count_events(self, tenant_id: str | None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for (tenant, _), stream in self.streams.items():
            if tenant_id is None or tenant == tenant_id:
                counts[tenant] = counts.get(tenant, 0) + len(stream)
        return counts

    async def signing_starts(self, tenant_id: str | None) -> dict[str, int]:
        starts: dict[str, int] = {}
        for event in self.events:
            if event.signature is not None and tenant_id in (None, event.tenant_id):
                starts.setdefault(event.tenant_id, event.position)
        return starts

    async def events_newest_first(self, tenant_id: str, before: int | None, limit: int
                                  ) -> list[NewestEvent]:
        # Positions are 1, 2, ...: the event at position p is self.events[p - 1].
        end = len(self.events) if before is None else min(len(self.events), before - 1)
        found: list[NewestEvent] = []
        for event in reversed(self.events[:max(end, 0)]):
            if event.tenant_id == tenant_id:
                found.append((event.stream_id, event.version, event.position, event.actor))
                if len(found) == limit:
                    break
        return found

    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> StoredEvent | None:
        return self.by_id.get((tenant_id, event_id))

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        return self.blobs.get((tenant_id, digest))

    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        if query.related:
            return await read_related(query, self.query)
        digest = query.with_blob
        if digest is None:
            return self.views.select(query)
        # The join needs each row's tenant and digest, whichever columns were asked for.
        hidden = [name for name in ("tenant_id", digest)
                  if query.columns is not None and name not in query.columns]
        columns = None if query.columns is None else (*query.columns, *hidden)
        rows = self.views.select(dataclasses.replace(query, columns=columns))
        for row in rows:
            row["blob"] = await self.get_blob(row["tenant_id"], row[digest])
            for name in hidden:
                del row[name]
        return rows

    async def history(self, query: HistoryQuery) -> list[HistoryRow]:
        thread = (query.tenant_id, query.thread_id, query.namespace)
        views = self.views
        writes: dict[str, list[dict[str, Any]]] = {}
        for row in views.rows("thread_writes"):
            if (row["tenant_id"], row["thread_id"], row["namespace"]) == thread:
                writes.setdefault(row["checkpoint_id"], []).append(row)
        rows = history_rows(
            query,
            lambda checkpoint_id: views.row("thread_checkpoints", (*thread, checkpoint_id)),
            # Keyed by version, then channel (migration 0028's order).
            lambda channel, version: views.row("thread_channel_values",
                                               (*thread, version, channel)),
            lambda checkpoint_id: writes.get(checkpoint_id, []),
        )
        for row in rows:
            row["blob"] = await self.get_blob(query.tenant_id, row["digest"])
        return rows

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        return self.views.snapshot()

    async def blob_refs(self, tenant_id: str) -> Mapping[bytes, int]:
        return {digest: n for (tenant, digest), n in self.refs.items() if tenant == tenant_id}

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        blobs = self.blobs
        return {digest: len(blobs[tenant_id, digest]) for digest in digests
                if (tenant_id, digest) in blobs}

    async def blob_refs_page(
        self, tenant_id: str, after: bytes, limit: int
    ) -> list[tuple[bytes, int]]:
        # One pass over the counts, holding only the page: verify's memory stays flat.
        return heapq.nsmallest(limit, (
            (digest, n) for (tenant, digest), n in self.refs.items()
            if tenant == tenant_id and digest > after
        ))

    # -- the transparency tree (derived: the file store rebuilds it after each open) ------

    async def tree_state(self, tenant_id: str) -> TreeState:
        return self.tree_states.get(tenant_id, EMPTY_TREE)

    async def tree_nodes(self, tenant_id: str, nodes: Sequence[Node]) -> dict[Node, bytes]:
        hashes = self.tree_hashes
        return {node: hashes[tenant_id, *node] for node in nodes
                if (tenant_id, *node) in hashes}

    async def tree_leaf(self, tenant_id: str, event_id: uuid.UUID) -> int | None:
        return self.tree_leaves.get((tenant_id, event_id))

    async def extend_tree(self, tenant_id: str, old_size: int,
                          extension: TreeExtension) -> bool:
        # No await between the check and the writes: atomic within the event loop.
        if self.tree_states.get(tenant_id, EMPTY_TREE).size != old_size:
            return False
        for (level, index), digest in extension.nodes.items():
            self.tree_hashes[tenant_id, level, index] = digest
        for event_id, index in extension.leaves:
            self.tree_leaves[tenant_id, event_id] = index
        self.tree_states[tenant_id] = extension.state
        return True

    async def replace_tree(self, tenant_id: str, expected: TreeState,
                           tree: TreeExtension) -> bool:
        if self.tree_states.get(tenant_id, EMPTY_TREE).size != expected.size:
            return False
        for key in [key for key in self.tree_hashes if key[0] == tenant_id]:
            del self.tree_hashes[key]
        for leaf in [leaf for leaf in self.tree_leaves if leaf[0] == tenant_id]:
            del self.tree_leaves[leaf]
        self.tree_states.pop(tenant_id, None)
        return await self.extend_tree(tenant_id, 0, tree) if tree.state.size else True
