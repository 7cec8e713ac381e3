"""`EventLog`: the log as stores, the CLI and applications use it (it knows no store).

Appends (new events, and imported ones as they were recorded) go through one path
(`eventlog.log._append`); reads — streams, the log in order, views, stream heads, blobs —
check the log is open and validate ids before they reach the backend; `verify` lives in
`eventlog.log._chain`.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Any

import eventlog.events.retention  # noqa: F401  (registers the retention events)
from eventlog.clock import Clock, read_clock, system_clock
from eventlog.crypto._seal import MAGIC, Header
from eventlog.errors import (
    CorruptBlob,
    CorruptEvent,
    ForgedEvent,
    InvalidInput,
    KeyringRequired,
    PayloadTooLarge,
    StorageError,
    UnknownConsumer,
)
from eventlog.events import Event, EventRegistry, default_registry
from eventlog.events.erasure import ERASURE_STREAM_PREFIX, SubjectKeyDestroyed
from eventlog.hashing import content_digest
from eventlog.ids import uuid7
from eventlog.log._append import (
    Appender,
    Draft,
    Part,
    check_digest,
    check_expected,
    check_releases,
    check_required,
)
from eventlog.log._chain import verify_chains
from eventlog.log._erasures import Erasure, ErasureLedger
from eventlog.log._heads import HeadCache
from eventlog.log._mode import EncryptionMode, read_mode
from eventlog.log._queries import check_history, check_query
from eventlog.log._rotation import Rotation, rotate_keys
from eventlog.log._sealing import Sealer, refuse_unsealed_read
from eventlog.log._signed import SignedReads, signature_finding
from eventlog.log._subscribe import (
    DEFAULT_LEASE,
    STARTS,
    Handler,
    Subscription,
    check_subscription,
    lag_of,
    run_projection,
)
from eventlog.log._tree import Tree, TreeFinding, TreeRebuild
from eventlog.log._waiting import Wakeups, Watch
from eventlog.merkle import InclusionProof, TreeHead
from eventlog.records import (
    AppendResult,
    ConsumerInfo,
    ExpectedVersion,
    LogPage,
    RecordedEvent,
    StoredEvent,
    StreamAppend,
    VerifyReport,
)
from eventlog.storage.base import StorageBackend
from eventlog.storage.contracts import caught_up
from eventlog.storage.contracts.consumers import ConsumerRow, ConsumerSeal
from eventlog.storage.contracts.events import NewestEvent
from eventlog.storage.contracts.keys import KeyRow
from eventlog.telemetry import (
    Database,
    ids,
    observe_consumer_lag,
    storage_call,
    traced,
    traced_iteration,
)
from eventlog.validation import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    check_actor,
    check_id,
    check_positive_limit,
)
from eventlog.writer_keys import EventSigner, WriterKeys, coerce_keys
from projections.base import Projection
from projections.query import JsonContains, RowRequired, ViewQuery, row_matches
from projections.thread_history import HistoryQuery, HistoryRow

_PAGE = 500
_MAX_VERSION = 2**63 - 1


def _describe_query(arguments: Mapping[str, Any]) -> dict[str, str]:
    """A view query's span attributes: its table and tenant (never its values)."""
    query = arguments.get("query")
    where = getattr(query, "where", None)
    tenant = getattr(query, "tenant_id", None) or (
        where.get("tenant_id") if isinstance(where, Mapping) else None)
    described = {"eventlog.view": getattr(query, "table", None), "eventlog.tenant_id": tenant}
    return {key: value for key, value in described.items() if isinstance(value, str)}


# What the log's spans record (`eventlog.telemetry`): ids and counts, never values.
_TENANT = ids(tenant_id="eventlog.tenant_id")
_STREAM = ids(tenant_id="eventlog.tenant_id", stream_id="eventlog.stream_id")


def _reader(arguments: Mapping[str, Any]) -> Database:
    """The database a read goes to: the log's read side (a replica, with ``read_url``)."""
    database: Database = arguments["self"].reader.database
    return database


def _view(arguments: Mapping[str, Any]) -> Any:
    """The view table a query reads."""
    return getattr(arguments.get("query"), "table", None)


def _event_count(page: LogPage) -> dict[str, int]:
    return {"eventlog.events": len(page.events)}


def _blob_count(found: Mapping[bytes, bytes]) -> dict[str, int]:
    return {"eventlog.blobs": len(found)}


def _row_count(rows: Sequence[object]) -> dict[str, int]:
    return {"eventlog.rows": len(rows)}


class EventLog:
    """An append-only, hash-chained log of events, with inline projections.

    Open one with `eventlog.open_log`, which yields it as an `eventlog.OpenLog`: this log
    with the stores built over it (``log.checkpoints``, ``log.interrupts``). The log itself
    knows no store. Everything is scoped by ``tenant_id``: no
    read returns another tenant's events, blobs or view rows. ``projections`` are the
    inline projections folded into every append (``projections.INLINE_PROJECTIONS`` for
    the stores' views).

    ``actor`` names the principal every event this log appends is recorded as appended
    by (`acting_as` overrides it for a block of code); None records none.
    """

    def __init__(
        self,
        storage: StorageBackend,
        *,
        projections: Sequence[Projection],
        registry: EventRegistry | None = None,
        clock: Clock = system_clock,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        reader: StorageBackend | None = None,
        actor: str | None = None,
        sealer: Sealer | None = None,
        signer: EventSigner | None = None,
        writer_keys: WriterKeys | None = None,
    ) -> None:
        self.storage = storage
        # With a keyring (`open_log(keyring=...)`): what seals appends and opens reads.
        self.sealer = sealer
        self.signer = signer
        """What signs every append (the keyring's writer key); None signs nothing."""
        self.writer_keys = writer_keys
        """The writer public keys signatures are checked against (None: none known)."""
        # Each tenant's first signed position, once found (`SignedReads.signing_start`);
        # shared, not copied, by the twins and siblings, as the head cache is not.
        self._signing_starts: dict[str, int] = {}
        # Whether the log is encrypted, and under which keyrings: checked before writes.
        self._mode = EncryptionMode(storage, None if sealer is None else sealer.provider)
        # Each subject's erasure as its (checked) erasure stream says: the key rows obey it.
        self._erasures = ErasureLedger(SignedReads(storage, self._decoded,
                                                   writer_keys or None, self._signing_starts))
        if sealer is not None:
            sealer.erasures = self._erasures
        self.actor = None if actor is None else check_actor(actor)
        # Shared (not copied) by `on_primary`'s twin, the face and `sibling`, so a block
        # acting as someone reaches the stores' appends too.
        self._acting: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            "eventlog_acting_as", default=None)
        # Shared the same way: the subject a `sealing_for` block seals under.
        self._subject: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            "eventlog_sealing_for", default=None)
        # Where the read side reads: the storage itself, or (open_log's read_url) a hot
        # standby. Appends, stream heads and commit-outcome lookups always use `storage`.
        self.reader = storage if reader is None else reader
        self.registry = registry if registry is not None else default_registry
        self.projections: tuple[Projection, ...] = tuple(projections)
        self.clock = clock
        self.max_payload_bytes = check_positive_limit("max_payload_bytes", max_payload_bytes)
        self.schema_revision: str | None = None
        self._heads = HeadCache(
            lambda tenant, stream: self.storage.stream_head(tenant, stream),
            lambda keys: self.storage.stream_heads(keys),
        )
        self._appender = Appender(storage, self._heads, self.projections, self.registry,
                                  signer)
        self._lifecycle = _Lifecycle()
        self._tree = Tree(storage, writer_keys or None, self._signing_starts)
        # What the projections' folds copy of sealed event fields: table → column → paths.
        self._sealed_columns: dict[str, Mapping[str, Any]] = {
            table: columns for projection in self.projections
            for table, columns in getattr(projection, "sealed_columns", {}).items()}
        # Whose the sealed values of each such table's rows are: table → `SealedRow`.
        self._sealed_rows: dict[str, Any] = {
            table: binding for projection in self.projections
            for table, binding in getattr(projection, "sealed_rows", {}).items()}
        self._as_stored = False
        self.wakeups = Wakeups()
        """Wakes this log's subscribers (and its siblings') after each of its appends."""

    async def append(
        self,
        tenant_id: str,
        stream_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | ExpectedVersion = ExpectedVersion.ANY,
        attach: Iterable[bytes] = (),
        release: Mapping[bytes, int] | None = None,
        require: Sequence[RowRequired] = (),
        actor: str | None = None,
        subject: str | None = None,
    ) -> AppendResult:
        """Append ``events`` to a stream in one transaction.

        ``expected_version`` is `ANY` (append at the end, retrying internally on a race),
        `NO_STREAM`, or the exact version the stream must be at; on a mismatch
        `VersionConflict` is raised and nothing is written. ``attach`` are blob payloads
        stored content-addressed in the same transaction (each adds one reference);
        ``release`` drops references by digest, deleting a blob at zero. ``require`` are
        view rows of this tenant that must exist as the append commits (`RowRequired`):
        checked in the append's own transaction (one statement on PostgreSQL), each
        missing one raises its `InvalidInput` and nothing is written. ``actor`` names who
        appends (else `acting_as`'s, else the log's ``actor``), chained with each event.

        With a keyring, the state payloads and free-text fields are sealed under the key
        of ``subject`` (by default the session's or thread's id, an interrupt batch's
        thread); `SubjectErased` if that subject was erased (`reopen_subject` first).
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        expected = check_expected(expected_version)
        acting = self._actor_for(actor)
        recorded_at = read_clock(self.clock)
        plain = list(attach)
        encoded = self._encode(events, stream_id)
        await self._mode.before_write(seals=self._seals(encoded, plain), now=recorded_at)
        encoded, payloads = await self._sealed(
            tenant_id, stream_id, encoded, plain, subject, recorded_at)
        drafts = [Draft(uuid7(), tag, data, event, recorded_at, acting)
                  for tag, data, event in encoded]
        result = await self._appender.commit(
            tenant_id, stream_id, drafts, expected,
            self._blob_adds(payloads, sealed=payloads is not plain),
            check_releases(release), required=check_required(require, tenant_id),
        )
        self.wakeups.fire()
        return result

    async def append_batch(self, appends: Sequence[StreamAppend]) -> list[AppendResult]:
        """Append to many streams in ONE transaction: all of it, or nothing.

        Each `StreamAppend` is what one `append` call would take, and is checked the same
        way (its ``expected_version``, its own hash chain, its blobs); the inline views
        change as they would after those appends one by one. A stream may appear once per
        batch. If any stream is not at its expected version, `VersionConflict` names it
        and nothing is written. Returns one `AppendResult` per stream, in order.
        """
        self._check_open("append")
        if isinstance(appends, StreamAppend) or not isinstance(appends, Sequence) or not appends:
            raise InvalidInput("appends", "must be a non-empty sequence of StreamAppend")
        acting = self._actor_for(None)
        recorded_at = read_clock(self.clock)
        parts = []
        seen: set[tuple[str, str]] = set()
        checked = []
        for item in appends:
            if not isinstance(item, StreamAppend):
                raise InvalidInput("appends", f"must hold StreamAppend, not {item!r}"[:200])
            key = (check_id("tenant_id", item.tenant_id), check_id("stream_id", item.stream_id))
            if key in seen:
                raise InvalidInput("appends", f"stream {item.stream_id!r} appears twice")
            seen.add(key)
            checked.append((item, self._encode(item.events, item.stream_id), list(item.attach)))
        await self._mode.before_write(
            seals=any(self._seals(encoded, plain) for _, encoded, plain in checked),
            now=recorded_at)
        for item, encoded, plain in checked:
            encoded, payloads = await self._sealed(
                item.tenant_id, item.stream_id, encoded, plain, None, recorded_at)
            drafts = [Draft(uuid7(), tag, data, event, recorded_at, acting)
                      for tag, data, event in encoded]
            parts.append(Part(
                item.tenant_id, item.stream_id, drafts, check_expected(item.expected_version),
                self._blob_adds(payloads, sealed=payloads is not plain),
                check_releases(item.release),
            ))
        results = await self._appender.commit_batch(parts)
        self.wakeups.fire()
        return results

    async def append_recorded(
        self,
        tenant_id: str,
        events: Sequence[StoredEvent],
        *,
        blobs: Mapping[bytes, tuple[bytes, int]] | None = None,
        release: Mapping[bytes, int] | None = None,
    ) -> list[AppendResult]:
        """Append already-recorded events exactly as they are (an import), in ONE
        transaction.

        The events may belong to several streams, each stream's events consecutive in
        ``events``; each event keeps its id, version, recorded time, bytes and hashes, and
        the inline projections fold them as any append's. ``blobs`` maps a digest to its
        payload and the references to add; ``release`` drops references by digest, as
        `append`'s. Each stream's events must continue it (the next version, linked to
        its head hash), else `VersionConflict`; each must hash to its recorded hash and
        belong in its stream, else `InvalidInput`. Nothing is written in either case.
        Returns one `AppendResult` per stream, in order.
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        if isinstance(events, StoredEvent) or not isinstance(events, Sequence) or not events:
            raise InvalidInput("events", "must be a non-empty sequence of stored events")
        groups: dict[str, list[StoredEvent]] = {}
        previous: str | None = None
        for stored in events:
            stream_id = check_id("stream_id", stored.stream_id)
            if stream_id != previous and stream_id in groups:
                raise InvalidInput("events", f"stream {stream_id!r} is not consecutive")
            groups.setdefault(stream_id, []).append(stored)
            previous = stream_id
        for group in groups.values():
            self._check_imported_signatures(tenant_id, group)
        parts = [
            Part(tenant_id, stream_id, [
                Draft(stored.event_id, stored.type, stored.data, self.decode(stored).event,
                      stored.recorded_at, _imported_actor(stored.actor), stored.signature)
                for stored in group
            ], group[0].version - 1, {}, {}, recorded=group)
            for stream_id, group in groups.items()
        ]
        for part in parts:
            for draft in part.drafts:
                _check_home(draft.type, draft.event, part.stream_id)
        parts[0] = parts[0]._replace(blob_adds=dict(blobs or {}),
                                     releases=check_releases(release))
        results = await self._appender.commit_batch(parts)
        self.wakeups.fire()
        return results

    def _check_imported_signatures(self, tenant_id: str, group: list[StoredEvent]) -> None:
        """Refuse (`ForgedEvent`) an imported stream's event whose signature does not hold
        under this log's writer keys, or that is unsigned after a signed one: an import
        stores signatures as recorded, so it must not store one it cannot stand behind.
        Without writer keys only the second rule can be checked."""
        signed = False
        for stored in group:
            found = signature_finding(self.writer_keys or None, stored, signed_before=signed,
                                      start=None)
            if found is not None:
                raise ForgedEvent(tenant_id, stored.stream_id, stored.version, *found)
            signed |= stored.signature is not None

    @property
    def signed(self) -> SignedReads:
        """The log's checked read side (`SignedReads`): a stream's events, each one's chain
        link and writer signature checked as it is read, `ForgedEvent` at the first that
        is not the application's. What anything that decides from the log reads."""
        return SignedReads(self.reader, self._decoded, self.writer_keys or None,
                           self._signing_starts)

    @traced_iteration("read_stream", _STREAM, where=_reader, collection="events")
    async def read_stream(
        self, tenant_id: str, stream_id: str, from_version: int = 1, *, limit: int | None = None
    ) -> AsyncIterator[RecordedEvent]:
        """Every event of one stream from ``from_version`` on (at most ``limit``), in order."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        if isinstance(from_version, bool) or not isinstance(from_version, int):
            raise InvalidInput("from_version", f"must be a whole number, not {from_version!r}")
        left = _MAX_VERSION if limit is None else check_positive_limit("limit", limit)
        version = max(from_version, 1)
        while version <= _MAX_VERSION and left > 0:  # beyond it no event can exist (int64)
            page = await self.reader.read_stream(
                tenant_id, stream_id, version, min(_PAGE, left)
            )
            for stored in page:
                yield await self._decoded(stored)
            if len(page) < min(_PAGE, left):
                return
            left -= len(page)
            version = page[-1].version + 1

    @storage_call("read_all", _reader, collection="events", describe=_TENANT,
                  outcome=_event_count)
    async def read_all(
        self, after: str | None = None, limit: int = _PAGE, tenant_id: str | None = None
    ) -> LogPage:
        """A page of the log in log order after the cursor ``after``; gap-safe.

        Events come as stored: on an encrypted log their free-text fields are the sealed
        markers the views fold (what a rebuild, an export or a follower needs);
        `open_event` opens one. Log order is position order on single-writer backends.
        On PostgreSQL it is
        (writer transaction, position): an event never appears before one that committed
        ahead of it became visible, so following with the returned cursor never skips.
        """
        self._check_open("read")
        check_positive_limit("limit", limit, maximum=10_000)
        if after is not None and not isinstance(after, str):
            raise InvalidInput("after", f"must be a cursor string, not {after!r}")
        if tenant_id is not None:
            check_id("tenant_id", tenant_id)
        rows, cursor = await self.reader.read_all(after, limit, tenant_id)
        return LogPage(events=[self.decode(row) for row in rows], cursor=cursor)

    @asynccontextmanager
    async def hold_stream(self, tenant_id: str, stream_id: str) -> AsyncIterator[None]:
        """Hold one stream for a decision: inside the block no other append to the stream
        commits (other processes' included), and the calling task's reads and appends go
        through one transaction, committed when the block ends and rolled back if it
        raises (`EventStorage.hold_stream`).

        For a write decided from what it reads (a thread delete, a prune) that keeps
        losing version races to appends of its stream: held, the version it reads is
        the version it appends at. Keep the block short (every other writer of the
        stream waits, and on SQLite every writer of the file), and use the log only from
        the calling task inside. Reads go to the primary only on a log reading from it
        (`on_primary`).
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        async with self._appender.hold(tenant_id, stream_id):
            yield

    async def wait_readable(self, max_wait: float = 30.0) -> bool:
        """Wait until every event committed before this call is readable by `read_all`.

        Immediate on single-writer backends. On PostgreSQL `read_all` shows an event only
        once every transaction older than its writer has ended (that is what makes
        following gap-safe), so a whole-log read that must include everything committed
        so far (verify, rebuild, export) waits here first. Reading from a replica, it
        first waits for the replica to replay what the primary has written. Returns False
        if a transaction stayed open (or the replica stayed behind) past ``max_wait``.
        """
        self._check_open("read")
        # A replica first catches up with the primary.
        if self.reader is not self.storage and not await caught_up(
                self.storage, self.reader, max_wait):
            return False
        return await self.reader.wait_readable(max_wait)

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        """A blob's bytes by digest within a tenant, or None; `CorruptBlob` when the stored
        bytes do not hash to ``digest``."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_digest("digest", digest)
        payload = await self.reader.get_blob(tenant_id, digest)
        if payload is not None and content_digest(payload) != digest:
            raise CorruptBlob(digest)
        if payload is None:
            return None
        return await self._open_blob(tenant_id, payload)

    async def blob_addresses(self, tenant_id: str, stream_id: str) -> Callable[[bytes], bytes]:
        """How a payload attached to an append to ``stream_id`` is addressed once stored:
        its SHA-256 on a plain log; with a keyring, the SHA-256 of its envelope under the
        subject the append seals under (a `sealing_for` block's, else the stream's;
        `Sealer.addresses`; `SubjectErased` for an erased subject). For
        stores that name blobs inside a sealed blob (a manifest naming its elements),
        where the log's renaming of plain digests in event bytes does not reach."""
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        if self.sealer is None:
            return content_digest
        now = read_clock(self.clock)
        await self._mode.before_write(seals=True, now=now)
        return await self.sealer.addresses(tenant_id, stream_id, now=now,
                                           subject=self._subject.get())

    @storage_call("get_blobs", _reader, collection="blobs", describe=_TENANT,
                  outcome=_blob_count)
    async def get_blobs(self, tenant_id: str, digests: Iterable[bytes]) -> dict[bytes, bytes]:
        """The blobs of ``digests`` that exist within the tenant, by digest (one read on SQL
        backends); a purged or unknown digest is simply absent from the result."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        wanted = [check_digest("digests", digest) for digest in dict.fromkeys(digests)]
        found = await self.reader.get_blobs(tenant_id, wanted) if wanted else {}
        await self._open_blobs(tenant_id, found)
        return found

    async def _open_blobs(self, tenant_id: str, found: dict[bytes, bytes]) -> None:
        """Open blobs read by digest (in place), each only once its bytes hash to its
        digest (no swap); plain bytes of a plain log are left as they are."""
        if self.sealer is None and not any(payload.startswith(MAGIC)
                                           for payload in found.values()):
            return
        for digest, payload in found.items():
            if content_digest(payload) != digest:
                raise CorruptBlob(digest)
            found[digest] = await self._open_blob(tenant_id, payload)

    @traced("eventlog.verify", _TENANT)
    async def verify(self, tenant_id: str | None = None, *,
                     writer_keys: Iterable[Any] = ()) -> VerifyReport:
        """Recompute every stream's hash chain from the stored bytes, and check every
        event's writer signature.

        Reports, per stream, the first broken link, hash mismatch or missing version, and
        a stream whose chain ends before the version its head row records (a truncated
        tail, or a stream whose events are gone altogether). Every blob the events
        reference is read and hashed: a blob that is missing, whose bytes do not hash to
        its digest, or whose reference count differs from the events' is reported too,
        and so is each data key the key table holds for a generation its subject's
        erasure record erased (``key_restored``: written back after the erasure).

        Each event that is not the application's is named: ``forged`` (its signature does
        not hold under the writer public keys: the log's own, from its keyring, and
        ``writer_keys`` — public keys, PEM text or verifier keys an auditor holds; no
        secret is needed) or ``unsigned`` (none, where its tenant's events are signed).
        With no writer key known, signatures go unchecked (``signatures_checked`` False).
        """
        self._check_open("verify")
        if tenant_id is not None:
            check_id("tenant_id", tenant_id)
        keys = self.writer_keys
        given = coerce_keys(writer_keys)
        if given:
            keys = WriterKeys(given) if keys is None else keys | WriterKeys(given)
        return await verify_chains(self.reader, self.projections, self.registry, tenant_id,
                                   keys)

    # -- the transparency tree: heads and proofs a stranger can check --------------------

    @traced("eventlog.tree_head", _TENANT)
    async def tree_head(self, tenant_id: str) -> TreeHead:
        """The head of the tenant's RFC 9162 tree over every event of the tenant readable
        now (its ``size`` and 32-byte ``root``): the leaves are the tenant's events in
        `read_all` order, each leaf ``SHA-256(0x00 || event hash)``.

        Integrates the events appended since the last head into the stored tree first
        (never blocking an append); reads O(log n) stored nodes.
        """
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        return await self._tree.head(tenant_id)

    @traced("eventlog.prove_inclusion", _TENANT)
    async def prove_inclusion(self, tenant_id: str, event_id: uuid.UUID,
                              size: int) -> InclusionProof | None:
        """The proof that the tenant's event ``event_id`` is a leaf of its tree of ``size``
        (a head's size); None if the tenant has no such event, or the tree of that size
        does not hold it yet (another tenant's event is exactly as absent).
        `InvalidInput` if the tenant's tree is not that large."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        if not isinstance(event_id, uuid.UUID):
            raise InvalidInput("event_id", f"must be a UUID, not {event_id!r}"[:200])
        return await self._tree.inclusion(tenant_id, event_id, _tree_size("size", size, 1))

    @traced("eventlog.prove_consistency", _TENANT)
    async def prove_consistency(self, tenant_id: str, old_size: int,
                                new_size: int) -> list[bytes]:
        """The RFC 9162 proof that the tenant's tree of ``old_size`` is a prefix of its tree
        of ``new_size`` (empty when the sizes are equal or ``old_size`` is 0)."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        return await self._tree.consistency(tenant_id, _tree_size("old_size", old_size, 0),
                                            _tree_size("new_size", new_size, 0))

    async def check_tree(self, tenant_id: str,
                         head: TreeHead | None = None) -> list[TreeFinding]:
        """Recompute the tenant's tree from its events: whether its first ``head.size``
        leaves still give ``head.root`` (a cut or a rewrite found is named), and whether
        every stored node is the hash of its events. Empty when all holds. Reads every
        event of the tenant."""
        self._check_open("verify")
        check_id("tenant_id", tenant_id)
        return await self._tree.check(tenant_id, head)

    async def rebuild_tree(self, tenant_id: str, heads: Iterable[TreeHead] = (), *,
                           accept_new_root: bool = False) -> TreeRebuild:
        """Replace the tenant's stored tree (derived data) with the tree its events give,
        in one transaction: the repair for a damaged tree `check_tree` found.

        It cannot launder a rewrite of the log. Every head in ``heads`` (signed heads
        someone kept) must still be the root of the events' first ``size`` leaves:
        otherwise `TreeRebuildRefused` names the cut or the rewrite, and nothing overrides
        it. Without a head, the stored tree is the evidence: a rebuild that would drop its
        leaves for other events (cut, or rewritten and re-chained after they were
        integrated) is refused too, unless ``accept_new_root`` discards that evidence (the
        result lists what was discarded). Reads every event of the tenant."""
        self._check_open("rebuild the tree")
        check_id("tenant_id", tenant_id)
        kept = tuple(heads)
        for head in kept:
            if not isinstance(head, TreeHead):
                raise InvalidInput("heads", f"must be TreeHead values, not {head!r}"[:200])
        return await self._tree.rebuild(tenant_id, kept, bool(accept_new_root))

    # -- durable consumers: subscriptions, projections, their positions -----------------

    def subscribe(
        self, name: str, *, tenant_id: str | None = None, types: Sequence[str] | None = None,
        poll_interval: float = 1.0, start: str = "beginning", lease: float = DEFAULT_LEASE,
        wait: bool = False, holder: str | None = None,
    ) -> Subscription:
        """A durable consumer of the log, to use as ``async with log.subscribe(...) as sub``:
        ``async for event in sub`` yields its scope's events in gap-safe log order
        (waiting for new ones), and ``await sub.ack(event)`` stores its position after
        ``event`` in the log's own database.

        Reopened after a crash, the consumer resumes after its last ack (at-least-once:
        what was delivered and not acknowledged is delivered again, nothing is skipped).
        ``tenant_id`` and ``types`` (event type tags) narrow it; they are stored with it,
        and reopening it with others raises `ConsumerScopeChanged`. A NEW consumer starts
        at ``start``: ``"beginning"`` of its scope, ``"end"`` (only what comes next), or
        a cursor `read_all` returned. One holder at a time: while another holder's lease
        (``lease`` seconds, renewed by its acks and waits) runs, opening raises
        `ConsumerHeld`, or with ``wait=True`` waits for it; a holder taken over after its
        lease lapsed gets `ConsumerFenced` and delivers nothing more. New events wake it
        at once when this log appended them, or PostgreSQL notifies it; otherwise it
        polls every ``poll_interval`` seconds.
        """
        self._check_open("subscribe")
        kinds, interval, seconds = check_subscription(name, tenant_id, types, poll_interval,
                                                      lease)
        if not isinstance(start, str) or not start:
            raise InvalidInput("start", f"must be one of {', '.join(STARTS)} or a cursor, "
                                        f"not {start!r}"[:200])
        if holder is not None:
            check_id("holder", holder)
        return Subscription(self, name, tenant_id=tenant_id, types=kinds,
                            poll_interval=interval, start=start, lease=seconds, wait=wait,
                            holder=holder)

    async def project(
        self, name: str, handler: Handler, *, tenant_id: str | None = None,
        types: Sequence[str] | None = None, batch: int = 100, poll_interval: float = 1.0,
        start: str = "beginning", lease: float = DEFAULT_LEASE, wait: bool = False,
        until_idle: bool = False,
    ) -> int:
        """Run a projection of your own: ``await handler(event, connection)`` for each event
        of a durable consumer (as `subscribe` opens it), ``batch`` events per transaction.

        On SQL backends the handler's writes to your own tables and the consumer's
        position commit in ONE transaction, on the ``connection`` handed to it (an
        asyncpg connection on PostgreSQL, a SQLAlchemy ``AsyncConnection`` on SQLite):
        exactly once with respect to the log. A handler that raises rolls its batch back
        (the error reaches you; the batch is redelivered next time). On the memory and
        file backends ``connection`` is None and the position is stored after the batch
        (at-least-once). Runs until cancelled, or with ``until_idle`` until it has caught
        up; returns how many events it handled. `reset_consumer` replays it.
        """
        check_positive_limit("batch", batch, maximum=10_000)
        if not callable(handler):
            raise InvalidInput("handler", f"must be an async callable, not {handler!r}"[:200])
        async with self.subscribe(name, tenant_id=tenant_id, types=types,
                                  poll_interval=poll_interval, start=start, lease=lease,
                                  wait=wait) as subscription:
            return await run_projection(subscription, handler, batch=batch,
                                        until_idle=until_idle)

    def watch(self) -> Watch:
        """Wake-ups for a reader following the log without a consumer, as ``async with
        log.watch() as watch``: ``watch.clear()`` before each read, ``await
        watch.wait(seconds)`` after an empty one returns at once when new events may be
        readable (this log's appends, PostgreSQL's notification), else after ``seconds``."""
        self._check_open("read")
        return Watch(self)

    @property
    def consumer_seal(self) -> ConsumerSeal:
        """How this log signs and checks its consumers' rows: with its writer key when its
        keyring holds one, against its writer public keys when it knows any; a log that
        knows none trusts the rows as stored (docs/decisions/consumers.md)."""
        signer, keys = self.signer, self.writer_keys
        return ConsumerSeal(sign=None if signer is None else signer.sign_consumer_row,
                            check=keys.check_consumer_row if keys else None)

    async def consumers(self, *, lag_limit: int = 100_000) -> list[ConsumerInfo]:
        """Every durable consumer, by name: its scope, position, holder (None once its
        lease has lapsed) and lag: the events of its scope after its position (counted up
        to ``lag_limit``) and how long the oldest of them has waited. A consumer whose row
        the application did not write (unreadable; unsigned or wrongly signed in a log
        with a writer key), or whose position is no cursor of this log, is listed with its
        `ConsumerInfo.problem` (and no lag), never failing the others."""
        self._check_open("read")
        check_positive_limit("lag_limit", lag_limit, maximum=10_000_000)
        now = read_clock(self.clock)
        seal = self.consumer_seal
        infos = []
        for row in await self.storage.consumers():
            found = seal.problem(row)
            problem = None if found is None else f"{found[0]}: {found[1]}"
            events, seconds = 0, 0.0
            if problem is None:
                try:
                    events, seconds = await self._lag(row, lag_limit, now)
                except InvalidInput as error:  # a cursor that is not this log's
                    problem = f"unreadable: its position is not a cursor of this log ({error})"
            if problem is None:
                observe_consumer_lag(row.name, events)
            held = row.lease_until is not None and row.lease_until > now
            infos.append(ConsumerInfo(
                name=row.name, tenant_id=row.tenant_id, types=row.types, cursor=row.cursor,
                holder=row.holder if held else None, lease_until=row.lease_until if held
                else None, token=row.token, updated_at=row.updated_at, lag_events=events,
                lag_seconds=seconds, lag_limit=lag_limit, problem=problem))
        return infos

    async def _lag(self, row: ConsumerRow, lag_limit: int, now: datetime) -> tuple[int, float]:
        """(events, seconds) the consumer of ``row`` is behind (`lag_of`)."""
        waiting: list[StoredEvent] = []
        cursor = row.cursor
        while len(waiting) < lag_limit:
            page = await self.storage.read_with_cursors(
                cursor, min(_PAGE * 10, lag_limit - len(waiting)), row.tenant_id)
            if not page:
                break
            waiting += [stored for stored, _ in page]
            cursor = page[-1][1]
        return lag_of(row, waiting, now)

    async def reset_consumer(self, name: str, to: str = "beginning") -> None:
        """Move a consumer's position to ``to`` (``"beginning"``, ``"end"`` or a cursor)
        and fence its holder: a projection reset to the beginning replays every event
        (its handler should write idempotently, or clear its tables first).
        `UnknownConsumer` when there is none of that name. In a log with a writer key the
        reset row is signed: this is how an operator adopts a row the log refuses
        (`ConsumerTampered`: an unsigned row from before signing, or an edited one), after
        checking its scope in `consumers`; a row not readable as written cannot be reset,
        only dropped."""
        self._check_open("consumer")
        check_id("name", name)
        if to == "beginning":
            cursor = None
        elif to == "end":
            cursor = await self.storage.end_cursor()
        else:
            await self.read_all(after=to, limit=1)  # refuses what is not this log's cursor
            cursor = to
        if not await self.storage.reset_consumer(name, cursor, read_clock(self.clock),
                                                 self.consumer_seal):
            raise UnknownConsumer(name)

    async def drop_consumer(self, name: str) -> None:
        """Forget a consumer (its position and lease); `UnknownConsumer` if there is none."""
        self._check_open("consumer")
        check_id("name", name)
        if not await self.storage.drop_consumer(name):
            raise UnknownConsumer(name)

    # -- the read side: what stores, the CLI and export/import read through ---------------

    @property
    def backend_name(self) -> str:
        """The backend's short name: ``memory``, ``sqlite``, ``postgresql`` or ``file``."""
        return self.storage.name

    @storage_call("query", _reader, collection=_view, describe=_describe_query,
                  outcome=_row_count)
    async def query(self, query: ViewQuery) -> list[dict[str, Any]]:
        """Rows of one view table answering ``query``, as plain dicts.

        The table must be one of the views (`projections.views.metadata`), and a
        ``tenant_id`` condition must be a valid id: no read crosses into another tenant by
        accident of a malformed id.
        """
        self._check_open("query")
        check_query(query)
        if self.sealer is not None and query.blobs:
            query = dataclasses.replace(query, blobs=())  # sealed bytes: `get_blobs` opens them
        if self.sealer is not None and any(isinstance(wanted, JsonContains)
                                           for wanted in query.where.values()):
            return await self._query_sealed_json(query)
        if self.sealer is None:
            rows = await self.reader.query(query)
        else:
            rows = await self._query_sealed(query, self.sealer)
        if query.with_blob is not None or query.related:
            await self._open_row_blobs(query, rows)
        return rows

    @storage_call("history", _reader, collection=_view, describe=_describe_query,
                  outcome=_row_count)
    async def history(self, query: HistoryQuery) -> list[HistoryRow]:
        """The rows of a thread checkpoint's channel history (`projections.thread_history`),
        of the query's tenant: one statement on SQL backends, however deep the walk.

        Each row's blob is read as every other read gives it: opened with a keyring (once
        its bytes hash to the row's digest), refused without one (`KeyringRequired`)."""
        self._check_open("query")
        check_history(query)
        rows = await self.reader.history(query)
        for row in rows:
            await self._open_row_blob(query.tenant_id, row, "digest")
        return rows

    async def stream_head(self, tenant_id: str, stream_id: str) -> tuple[int, bytes] | None:
        """The stream's last version and that event's hash, read afresh; None if empty."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("stream_id", stream_id)
        return await self._heads.get(tenant_id, stream_id, fresh=True)

    @storage_call("find_event", _reader, collection="events", describe=_TENANT)
    async def find_event(self, tenant_id: str, event_id: uuid.UUID) -> RecordedEvent | None:
        """The committed event with this id in this tenant, or None."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        if not isinstance(event_id, uuid.UUID):
            raise InvalidInput("event_id", f"must be a UUID, not {event_id!r}"[:200])
        stored = await self.reader.find_event(tenant_id, event_id)
        return None if stored is None else await self._decoded(stored)

    @storage_call("events_newest_first", _reader, collection="events", describe=_TENANT)
    async def events_newest_first(self, tenant_id: str, before: int | None = None,
                                  limit: int = _PAGE) -> list[NewestEvent]:
        """Up to ``limit`` of the tenant's events newest first in log order (after the event
        at position ``before`` in that walk, when given), as (stream id, version, position,
        actor):
        where each stream was last written, for a list of streams by activity
        (`EventStorage.events_newest_first`; not gap-safe)."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_positive_limit("limit", limit, maximum=10_000)
        if before is not None and (isinstance(before, bool) or not isinstance(before, int)):
            raise InvalidInput("before", f"must be a log position, not {before!r}"[:200])
        return await self.reader.events_newest_first(tenant_id, before, limit)

    async def blob_refs(self, tenant_id: str) -> dict[bytes, int]:
        """Reference counts of a tenant's stored blobs, by digest."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        return dict(await self.reader.blob_refs(tenant_id))

    async def dump_views(self) -> dict[str, list[dict[str, Any]]]:
        """Every view table's rows, sorted by primary key (to compare with a rebuild)."""
        self._check_open("read")
        return await self.reader.dump_views()

    def decode(self, stored: StoredEvent) -> RecordedEvent:
        """Decode a stored row into a `RecordedEvent` (unknown tags raise; a row that was
        not readable as written raises `CorruptEvent`)."""
        if stored.damage is not None:
            event = self.registry.corrupt(CorruptEvent(
                stored.type, stored.damage, stream_id=stored.stream_id, version=stored.version))
        else:
            event = self.registry.decode(
                stored.type, stored.data, stream_id=stored.stream_id, version=stored.version
            )
        return RecordedEvent.of(stored, event)

    @contextmanager
    def acting_as(self, actor: str) -> Iterator[str]:
        """Record ``actor`` as who appends every event this log (and its stores) appends
        inside the block, instead of the log's own ``actor``.

        A context variable: it holds across awaits and for tasks started inside the block
        (which copy the context when created), never for code outside it or tasks started
        before it; blocks nest, the innermost winning, and each restores what was before.
        """
        token = self._acting.set(check_actor(actor))
        try:
            yield actor
        finally:
            self._acting.reset(token)

    @contextmanager
    def sealing_for(self, subject: str | None) -> Iterator[str | None]:
        """Seal every append inside the block under ``subject``'s data key (a customer id
        shared by many threads, say) instead of each stream's own subject; an append
        naming its ``subject=`` still wins, and None leaves the defaults. A context
        variable, as `acting_as`. Without a keyring nothing is sealed; the thread store
        still records the subject on its puts (`sealing_subject`), for holds."""
        if subject is not None:
            check_id("subject", subject)
        token = self._subject.set(subject)
        try:
            yield subject
        finally:
            self._subject.reset(token)

    @property
    def sealing_subject(self) -> str | None:
        """The subject of the innermost `sealing_for` block around the caller; None outside
        every block. The thread store records it on its puts (a legal hold or retention
        on that subject then covers the thread), with or without a keyring."""
        return self._subject.get()

    @property
    def acting_block(self) -> str | None:
        """The principal of the innermost `acting_as` block around the caller; None
        outside every block (the log's own ``actor`` is not one)."""
        return self._acting.get()

    def holding_stream(self) -> bool:
        """Whether the calling task is inside `hold_stream` (its appends go through the
        hold's transaction, and must not wait for anyone else's)."""
        return self._appender.holding()

    @property
    def acting(self) -> str | None:
        """Who an append made here and now is recorded as appended by (None: nobody)."""
        acting = self._acting.get()
        return self.actor if acting is None else acting

    def _actor_for(self, actor: str | None) -> str | None:
        """An append's actor: its own ``actor``, else `acting`."""
        return self.acting if actor is None else check_actor(actor)

    def on_primary(self) -> EventLog:
        """This log with its read side on the primary: what deciding a write must read
        (`open_log` builds the stores on it). The log itself when it has no replica."""
        if self.reader is self.storage:
            return self
        twin = copy.copy(self)  # the same storage, head cache, appender and open state
        twin.reader = self.storage
        return twin

    def as_stored(self) -> EventLog:
        """This log with its read side showing what storage holds: view rows and events
        with their sealed fields as stored (what a rebuild from the log folds, so a
        comparison of views against one sees like with like), and blobs as their sealed
        bytes (what an export carries). Needs no keyring."""
        if self.sealer is None and self._as_stored:
            return self
        twin = copy.copy(self)
        twin.sealer = None
        twin._as_stored = True
        return twin

    def sibling(self, *, registry: EventRegistry | None = None) -> EventLog:
        """Another log over the same store, as a second process would see it: a head cache
        of its own (knowing nothing this log appended) and, when given, its own event
        registry. It shares this log's connections and open state: closing either closes
        both, and `close` is for the log `open_log` gave."""
        sibling = EventLog(
            self.storage, projections=self.projections,
            registry=self.registry if registry is None else registry, clock=self.clock,
            max_payload_bytes=self.max_payload_bytes, reader=self.reader, actor=self.actor,
            sealer=self.sealer, signer=self.signer, writer_keys=self.writer_keys,
        )
        sibling._signing_starts = sibling._tree.starts = self._signing_starts
        sibling._acting = self._acting
        sibling._subject = self._subject
        sibling._mode = self._mode
        sibling.schema_revision = self.schema_revision
        sibling._lifecycle = self._lifecycle
        sibling.wakeups = self.wakeups
        return sibling

    # -- encryption: erasure by destroying a key ------------------------------------------

    async def erase(self, tenant_id: str, subject: str, *, reason: str = "",
                    actor: str = "") -> int:
        """Erase a subject: destroy every generation of its data key and append a
        `SubjectKeyDestroyed` event (who, why; its time is when) to ``erasure:<subject>``.

        Afterwards its state payloads raise `SubjectErased`, its sealed fields read as
        erased, and its records (ids, steps, times) still list; the chain is untouched, so
        `verify` holds. Returns how many key generations were destroyed (0: nothing was
        held, e.g. erased before, and nothing is appended). Needs no keyring: destroying a
        key needs no key; but in a tenant whose events are signed the erasure must be
        signed too (an unsigned record would be named ``unsigned`` by `verify` and refused
        by whatever decides from it), so there a log without the writer key is refused
        (`InvalidInput`) before anything is destroyed.
        """
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("subject", subject)
        if not isinstance(reason, str) or not isinstance(actor, str):
            raise InvalidInput("reason", "reason and actor must be strings")
        if self.signer is None and await self.storage.signing_starts(tenant_id):
            raise InvalidInput("keyring", f"tenant {tenant_id!r}'s events are signed: erase "
                                          "through the log opened with its keyring, whose "
                                          "writer key signs the erasure record (nothing was "
                                          "destroyed)")
        # Before a key is destroyed: a log with another keyring may not record the erasure.
        await self._mode.before_write(seals=False, now=read_clock(self.clock))
        stream = ERASURE_STREAM_PREFIX + subject
        check_id("subject", stream)
        destroyed = await self.storage.destroy_subject_keys(tenant_id, subject,
                                                            read_clock(self.clock))
        if self.sealer is not None:
            self.sealer.forget(tenant_id, subject)
        if destroyed:
            # Every generation it holds is erased: the record says up to which, so a row
            # of one written back later is refused (`eventlog.log._erasures`).
            through = max([row.generation for row in await self.storage.subject_keys(
                tenant_id, subject)] + [(await self._erasures.erasure(
                    tenant_id, subject)).through])
            await self.append(tenant_id, stream, [SubjectKeyDestroyed(
                subject=subject, reason=reason, actor=actor, generations=destroyed,
                through=through)])
        return destroyed

    async def erasure_of(self, tenant_id: str, subject: str) -> Erasure:
        """What the log's erasure stream of the subject says (`Erasure`): every key
        generation up to ``through`` is erased (0: none), whatever the key table holds.
        Read from the checked stream: `ForgedEvent` for an erasure record that is not
        the application's. Needs no keyring."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        check_id("subject", subject)
        return await self._erasures.erasure(tenant_id, subject)

    async def encrypted_under(self) -> tuple[str, ...]:
        """The ids of the key-encryption keys the log is encrypted under, as it records
        them (else as its subject keys name them: `eventlog.log._mode`); empty for a log
        that is not encrypted. Needs no keyring."""
        self._check_open("read")
        mode = await read_mode(self.storage)
        return mode.kek_ids if mode.kind == "encrypted" else ()

    async def subject_keys(self, tenant_id: str, subject: str | None = None,
                           *, page: int = 1000, as_stored: bool = False) -> list[KeyRow]:
        """The data key rows (wrapped under the key-encryption key, or erased) of one
        subject, or of the whole tenant in key order when ``subject`` is None; never a key
        in the clear. They obey the log: a row of a generation the subject's erasure
        stream erased is given as erased, whatever it holds (a row written back from a
        backup is never handed on). ``as_stored=True`` gives them as the key table holds
        them instead: for an export, which applies the erasure records it writes itself
        (a later erasure is not in its file), and an import, which compares a file's key
        with the one the table holds."""
        self._check_open("read")
        check_id("tenant_id", tenant_id)
        rows: list[KeyRow] = []
        if subject is not None:
            rows = list(await self.storage.subject_keys(tenant_id, check_id("subject", subject)))
        else:
            after = (tenant_id, "", 0)  # no subject is empty: the tenant's first row is after
            while True:
                found = await self.storage.subject_keys_page(after, page)
                rows.extend(row for row in found if row.tenant_id == tenant_id)
                if len(found) < page or found[-1].tenant_id != tenant_id:
                    break
                after = (tenant_id, found[-1].subject, found[-1].generation)
        return rows if as_stored else await self._obeyed(rows)

    async def _obeyed(self, rows: list[KeyRow]) -> list[KeyRow]:
        """``rows`` with each one that holds a key of a generation its log erased given
        as erased (at the erasure's time)."""
        obeyed = []
        for row in rows:
            if row.wrapped is not None:
                erasure = await self._erasures.erasure(row.tenant_id, row.subject)
                if row.generation <= erasure.through:
                    row = dataclasses.replace(row, wrapped=None,
                                              erased_at=row.erased_at or erasure.at)
            obeyed.append(row)
        return obeyed

    async def add_subject_keys(self, tenant_id: str, rows: Sequence[KeyRow]) -> None:
        """Store key rows another log exported (wrapped as they were), those the log
        lacks; a row already held is left as it is, and a key of a generation this log
        erased is not stored (its erasure stream decides). What an import takes in."""
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        for row in rows:
            if row.tenant_id != tenant_id:
                raise InvalidInput("rows", f"a key row of another tenant ({row.subject!r})")
        for row in rows:
            if row.wrapped is not None and row.generation <= (
                    await self._erasures.erasure(tenant_id, row.subject)).through:
                continue
            await self.storage.add_subject_key(row)

    async def destroy_subject_keys(self, tenant_id: str, subject: str, at: datetime) -> int:
        """Destroy the subject's data keys as erased at ``at`` (an erasure another log
        recorded, carried by an import), appending nothing; how many generations.
        `erase` is the call that records an erasure of this log's own."""
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        destroyed = await self.storage.destroy_subject_keys(
            tenant_id, check_id("subject", subject), at)
        if self.sealer is not None:
            self.sealer.forget(tenant_id, subject)
        return destroyed

    async def rotate_keys(self, to: Any, *, page: int = 200) -> Rotation:
        """Re-wrap every data key of the log (every tenant's) under the keyring ``to``
        (a file's path or a `KeyProvider`), unwrapping with this log's keyring: one pass,
        resumable after a kill (`eventlog.log._rotation`). Afterwards only ``to`` opens
        the log. A keyring file ``to`` is given this keyring's writer public keys to keep
        (`eventlog.crypto.keep_writer_keys`), so what they signed still checks; another
        provider must trust them itself. Returns what it did (`Rotation`)."""
        self._check_open("append")
        if self.sealer is None:
            raise InvalidInput("keyring", "rotation unwraps with the log's current keyring: "
                                          "open the log with it (keyring=...)")
        import os

        from eventlog.crypto import keep_writer_keys, load_keyring

        page = check_positive_limit("page", page)
        if isinstance(to, str | os.PathLike) and self.writer_keys:
            # The new keyring checks what the old writer keys signed (events, and the
            # old keyring's retired keys' too), or verify would call those forged.
            keep_writer_keys(to, getattr(self.sealer.provider, "writer_public_keys", ()))
        new = load_keyring(to)
        await self._mode.before_write(seals=True, now=read_clock(self.clock))
        return await rotate_keys(self.storage, self.sealer.provider, new, page=page,
                                 now=read_clock(self.clock))

    async def reopen_subject(self, tenant_id: str, subject: str) -> int:
        """Give an erased subject a new data key (a new generation), so it can be written
        again: what was sealed under the destroyed keys stays erased. Returns the new
        generation. Needs the keyring."""
        self._check_open("append")
        check_id("tenant_id", tenant_id)
        check_id("subject", subject)
        if self.sealer is None:
            raise KeyringRequired(tenant_id, subject)
        now = read_clock(self.clock)
        await self._mode.before_write(seals=True, now=now)
        self.sealer.forget(tenant_id, subject)
        generation, _ = await self.sealer.current_key(tenant_id, subject, now=now,
                                                      reopen=True)
        return generation

    async def _sealed(
        self, tenant_id: str, stream_id: str, encoded: list[tuple[str, bytes, Event]],
        attach: list[bytes], subject: str | None, now: Any,
    ) -> tuple[list[tuple[str, bytes, Event]], list[bytes]]:
        """The append's events and blobs as storage must see them: sealed with a keyring
        (`eventlog.log._sealing`), as they are without."""
        sealer = self.sealer
        if sealer is None or not self._seals(encoded, attach):
            return encoded, attach
        if subject is None:
            subject = self._subject.get()
        if subject is None:
            subject = await sealer.subject_for(tenant_id, stream_id,
                                               [event for _, _, event in encoded])
        else:
            check_id("subject", subject)
        generation, key = await sealer.current_key(tenant_id, subject, now=now)
        header = Header(subject, generation, stream_id, "state")
        for payload in attach:
            if not isinstance(payload, bytes):
                raise InvalidInput("attach", "blobs must be bytes")
            if len(payload) > self.max_payload_bytes:
                raise PayloadTooLarge("blob", len(payload), self.max_payload_bytes)
        payloads, renames = sealer.seal_blobs(tenant_id, header, key, attach)
        for _, _, event in encoded:
            # A thread's copy names the source's sealed addresses: they become the copy's.
            source = getattr(event, "source_thread_id", None)
            if isinstance(source, str):
                renames.update(await sealer.source_renames(
                    tenant_id, f"thread:{source}", attach, payloads, now=now,
                    subject=self._subject.get()))
        sealed = []
        for tag, data, event in encoded:
            data = sealer.seal_event(tenant_id, header, key, tag, data, renames,
                                     self.registry.sealed_fields(tag),
                                     record=event.sealed_record())
            if len(data) > self.max_payload_bytes:
                raise PayloadTooLarge(f"event {tag!r} (sealed)", len(data),
                                      self.max_payload_bytes)
            sealed.append((tag, data, self.registry.decode(tag, data, stream_id=stream_id)))
        return sealed, payloads

    def _seals(self, encoded: Sequence[tuple[str, bytes, Event]], attach: Sequence[bytes]
               ) -> bool:
        """Whether anything of an append is sealed with a keyring: a blob, or an event of a
        type that declares a sealed field (a tombstone or a claim without answers makes
        no key)."""
        return bool(attach) or any(self.registry.sealed_fields(tag) for tag, _, _ in encoded)

    async def open_event(self, recorded: RecordedEvent) -> RecordedEvent:
        """``recorded`` (from `read_all`) with its sealed free-text fields opened: as
        `read_stream` gives it (an erased subject's fields read ``{"$erased": true}``);
        itself on a log without a keyring or an event with nothing sealed."""
        if self.sealer is None or not self.registry.sealed_fields(recorded.type):
            return recorded
        return await self._decoded(StoredEvent(
            **{name: getattr(recorded, name) for name in _ENVELOPE_FIELDS}))

    async def _decoded(self, stored: StoredEvent) -> RecordedEvent:
        """`decode`, with the sealed fields opened (or marked erased) when the log has a
        keyring; the envelope's ``data`` stays the stored bytes the chain covers."""
        paths = self.registry.sealed_fields(stored.type)
        if self.sealer is None or stored.damage is not None or not paths:
            return self.decode(stored)
        data = await self.sealer.open_event(stored.tenant_id, stored.stream_id, stored.type,
                                            stored.data, paths)
        event = self.registry.decode(stored.type, data, stream_id=stored.stream_id,
                                     version=stored.version)
        return RecordedEvent.of(stored, event)

    async def _query_sealed(self, query: ViewQuery, sealer: Sealer) -> list[dict[str, Any]]:
        """The query's rows with their sealed columns opened, each value checked to be
        its row's own (`Sealer.open_rows`): the columns saying whose a row's values are
        are read with it when the query picks a sealed column without them."""
        sealed, bindings = self._sealed_columns, self._sealed_rows
        binding = bindings.get(query.table)
        extra: tuple[str, ...] = ()
        if binding is not None and query.columns is not None and any(
                column in sealed.get(query.table, {}) for column in query.columns):
            extra = tuple(c for c in binding.columns if c not in query.columns)
            query = dataclasses.replace(query, columns=(*query.columns, *extra))
        rows = await self.reader.query(query)
        await sealer.open_rows(
            query.where.get("tenant_id"), rows, sealed.get(query.table, {}),
            [(related.name, sealed.get(related.table, {}), bindings.get(related.table))
             for related in query.related], binding)
        for row in rows if extra else ():
            for column in extra:
                del row[column]
        return rows

    async def _query_sealed_json(self, query: ViewQuery) -> list[dict[str, Any]]:
        """A query whose ``JsonContains`` conditions name sealed columns: the database
        cannot look inside ciphertext, so every row the other conditions select is read,
        opened and tested here, then the limit applied (a scan of the rows selected)."""
        contains = {name: wanted for name, wanted in query.where.items()
                    if isinstance(wanted, JsonContains)}
        where = {name: wanted for name, wanted in query.where.items() if name not in contains}
        columns = (None if query.columns is None
                   else (*query.columns, *(name for name in contains
                                           if name not in query.columns)))
        rows = await self.query(dataclasses.replace(query, where=where, limit=None,
                                                    columns=columns))
        kept = [row for row in rows if row_matches(row, contains)][:query.limit]
        if query.columns is not None:
            for row in kept:
                for name in contains:
                    if name not in query.columns:
                        del row[name]
        return kept

    async def _open_row_blobs(self, query: ViewQuery, rows: list[dict[str, Any]]) -> None:
        """Open the blobs a query read with its rows (``"blob"``, its own and its related
        rows'): each only once its bytes hash to the digest the row names."""
        nested = [(related.name, related.with_blob) for related in query.related
                  if related.with_blob is not None]
        opened: set[int] = set()  # a related row may be shared by several rows: once
        for row in rows:
            tenant = row.get("tenant_id", query.where.get("tenant_id", ""))
            if row.get("blobs"):
                await self._open_blobs(tenant, row["blobs"])  # as `get_blobs` opens them
            if query.with_blob is not None:
                await self._open_row_blob(tenant, row, query.with_blob)
            for name, column in nested:
                for item in row.get(name) or ():
                    if id(item) not in opened:
                        opened.add(id(item))
                        await self._open_row_blob(tenant, item, column)

    async def _open_row_blob(self, tenant: str, row: dict[str, Any], column: str) -> None:
        payload = row.get("blob")
        if payload is None or (self.sealer is None and not payload.startswith(MAGIC)):
            return
        digest = row.get(column)
        digest = bytes.fromhex(digest) if isinstance(digest, str) else digest
        if digest is not None and content_digest(payload) != digest:
            raise CorruptBlob(digest)
        row["blob"] = await self._open_blob(tenant, payload)

    async def _open_blob(self, tenant_id: str, payload: bytes) -> bytes:
        if self._as_stored:
            return payload
        if self.sealer is None:
            refuse_unsealed_read(tenant_id, payload)
            return payload
        return await self.sealer.open_blob(tenant_id, payload)

    async def close(self) -> None:
        """Release the backend's connections and locks; the log refuses work afterwards."""
        if not self._lifecycle.closed:
            self._lifecycle.closed = True
            try:
                await self.storage.close()
            finally:
                if self.reader is not self.storage:
                    await self.reader.close()

    def _check_open(self, operation: str) -> None:
        if self._lifecycle.closed:
            raise StorageError(self.storage.name, operation, "the log is closed")

    # -- checking an append -------------------------------------------------------------

    def _encode(self, events: Sequence[Event], stream_id: str) -> list[tuple[str, bytes, Event]]:
        if isinstance(events, Event) or not isinstance(events, Sequence) or not events:
            raise InvalidInput("events", "must be a non-empty sequence of events")
        encoded = []
        for event in events:
            tag, data = self.registry.encode(event)
            self.registry.refuse_unreadable(tag, data, stream_id)
            _check_home(tag, event, stream_id)
            if len(data) > self.max_payload_bytes:
                raise PayloadTooLarge(f"event {tag!r}", len(data), self.max_payload_bytes)
            encoded.append((tag, data, event))
        return encoded

    def _blob_adds(self, attach: Iterable[bytes], *, sealed: bool = False
                   ) -> dict[bytes, tuple[bytes, int]]:
        """``sealed`` payloads were checked against the limit as plaintext (`_sealed`)."""
        adds: dict[bytes, tuple[bytes, int]] = {}
        for payload in attach:
            if not isinstance(payload, bytes):
                raise InvalidInput("attach", "blobs must be bytes")
            if not sealed and len(payload) > self.max_payload_bytes:
                raise PayloadTooLarge("blob", len(payload), self.max_payload_bytes)
            digest = content_digest(payload)
            adds[digest] = (payload, adds.get(digest, (payload, 0))[1] + 1)
        return adds


_ENVELOPE_FIELDS = tuple(field for field in StoredEvent.__struct_fields__ if field != "damage")


class _Lifecycle:
    """Whether a log (and the twin `on_primary` made of it) is closed."""

    closed = False


def _imported_actor(actor: Any) -> str | None:
    """An imported event's recorded actor, as valid as a new one's (or None)."""
    return None if actor is None else check_actor(actor, "events")


def _tree_size(field: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInput(field, f"must be a whole number ≥ {least}, not {value!r}"[:200])
    return value


def _check_home(tag: str, event: Event, stream_id: str) -> None:
    """Refuse an event that names another stream as its home (`Event.home_stream`)."""
    home = event.home_stream()
    if home is not None and home != stream_id:
        raise InvalidInput("events", f"a {tag!r} event belongs to stream {home!r}, "
                                     f"not {stream_id!r}"[:300])
