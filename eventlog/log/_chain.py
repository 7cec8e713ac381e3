"""Verify: recompute every stream's hash chain from the stored bytes, check each event's
writer signature (`eventlog.log._signed.signature_finding`), and check the heads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from eventlog.errors import CorruptEvent
from eventlog.events import EventRegistry
from eventlog.events.erasure import ERASURE_STREAM_PREFIX
from eventlog.hashing import GENESIS_HASH, recompute_hash
from eventlog.log._blobs import BlobCheck, BlobLedger, check_blobs
from eventlog.log._erasures import Erasure, fold_erasure
from eventlog.log._signed import signature_finding
from eventlog.records import StoredEvent, StreamProblem, VerifyReport
from eventlog.storage.base import StorageBackend
from eventlog.writer_keys import WriterKeys
from projections.base import Projection
from projections.query import ViewQuery
from projections.views import STREAM_HEADS


async def verify_chains(
    storage: StorageBackend, projections: Sequence[Projection], registry: EventRegistry,
    tenant_id: str | None, writer_keys: WriterKeys | None = None,
) -> VerifyReport:
    """Check every stream of ``tenant_id`` (all tenants when None) against its head row,
    every event's signature (against ``writer_keys`` when given; the unsigned rules
    whatever), and every blob the events reference against its digest and reference
    count."""
    where = {} if tenant_id is None else {"tenant_id": tenant_id}
    heads = {
        (row["tenant_id"], row["stream_id"]): row
        for row in await storage.query(ViewQuery(STREAM_HEADS, where))
    }
    keeps_heads = any(STREAM_HEADS in projection.tables for projection in projections)
    # Where each tenant's signing began, read before the scan: a tenant that starts
    # signing while it runs is held to it from the next verify on.
    starts = await storage.signing_starts(tenant_id)
    checker = ChainChecker(heads, keeps_heads=keeps_heads, keys=writer_keys, starts=starts)
    ledger = BlobLedger(registry)
    stored_before = await storage.count_events(tenant_id)
    erasures: dict[tuple[str, str], Erasure] = {}
    async for stored in storage.scan_streams(tenant_id):
        checker.feed(stored)
        if stored.stream_id.startswith(ERASURE_STREAM_PREFIX):
            subject = (stored.tenant_id, stored.stream_id[len(ERASURE_STREAM_PREFIX):])
            erasures[subject] = fold_erasure(erasures.get(subject, Erasure()), stored)
        event = ledger.feed(stored)
        if isinstance(event, CorruptEvent):
            checker.undecodable(stored, event)
        elif event is not None:
            checker.check_home(stored, event.home_stream())
    checker.end_scan()
    checker.check_counts(stored_before)
    for tenant, stream in list(checker.headless):
        where = {"tenant_id": tenant, "stream_id": stream}
        if not await storage.query(ViewQuery(STREAM_HEADS, where)):
            checker.still_headless((tenant, stream))
    await _check_erased_keys(storage, checker, erasures)
    tenants = ledger.tenants | set(stored_before)
    try:
        blobs = await _lasting_blob_problems(storage, registry, ledger, tenants)
        checker.problems += [
            msgspec.structs.replace(problem, streams=ledger.streams_naming(
                problem.tenant_id, bytes.fromhex(problem.blob or "")))
            for problem in blobs.problems
        ]
    finally:
        ledger.close()
    return msgspec.structs.replace(checker.finish(), blobs=blobs.checked,
                                   withheld_blobs=blobs.withheld)


async def _check_erased_keys(storage: StorageBackend, checker: ChainChecker,
                             erasures: dict[tuple[str, str], Erasure]) -> None:
    """Name each key row that holds a key of a generation its subject's erasure stream
    erased (``key_restored``: written back from a backup, or imported): the log refuses it
    as erased, and it should not be there. An erasure stream with a problem of its own
    (broken, forged, unsigned) decides nothing: that problem is reported."""
    doubtful = {(problem.tenant_id, problem.stream_id) for problem in checker.problems}
    for (tenant, subject), erasure in sorted(erasures.items()):
        stream = ERASURE_STREAM_PREFIX + subject
        if not erasure.through or (tenant, stream) in doubtful:
            continue
        for row in await storage.subject_keys(tenant, subject):
            if row.wrapped is not None and row.generation <= erasure.through:
                checker.problems.append(StreamProblem(
                    tenant_id=tenant, stream_id=stream, version=erasure.version,
                    kind="key_restored",
                    detail=f"subject {subject!r}: the key table holds its data key of "
                           f"generation {row.generation}, which the log erased (version "
                           f"{erasure.version} of {stream!r}): a key row written back "
                           "after the erasure (a backup, an import); it is refused, not "
                           "served; `eventlog erase` destroys it again"[:400]))


def signing_of(checker: ChainChecker) -> dict[str, Any]:
    """What the scan saw of signatures, as `VerifyReport`'s signing fields."""
    return {"signed_events": checker.signed_events, "signing_starts": dict(checker.starts),
            "signatures_checked": bool(checker.keys)}


async def _lasting_blob_problems(
    storage: StorageBackend, registry: EventRegistry, ledger: BlobLedger, tenants: set[str]
) -> BlobCheck:
    """Blob problems found twice: a create or delete committing between the scan and the
    blob reads can make a count differ once; tampering makes it differ every time."""
    first = await check_blobs(storage, ledger, tenants)
    if not first.problems:
        return first
    again = BlobLedger(registry)
    try:
        for tenant in sorted({problem.tenant_id for problem in first.problems}):
            async for stored in storage.scan_streams(tenant):
                again.feed(stored)
        recheck = await check_blobs(storage, again, {p.tenant_id for p in first.problems})
        lasting = {(p.tenant_id, p.kind, p.detail) for p in recheck.problems}
    finally:
        again.close()
    first.problems = [p for p in first.problems if (p.tenant_id, p.kind, p.detail) in lasting]
    return first


class ChainChecker:
    """Checks streams one after another, fed in (tenant, stream, version) order.

    The head rows were read before the scan, and a live log only grows, so a stream may
    have moved past its head row by the time it is scanned (or appeared after the heads
    were read): its chain must then pass through the head's (version, hash), and a stream
    without a head row is re-checked afterwards (`headless`) rather than reported.
    """

    def __init__(self, heads: dict[tuple[str, str], dict[str, Any]], *, keeps_heads: bool,
                 keys: WriterKeys | None = None, starts: dict[str, int] | None = None) -> None:
        self.heads = heads
        self.keeps_heads = keeps_heads
        self.keys = keys or None
        self.starts = starts or {}
        self.signed = False
        """Whether an earlier event of the stream being scanned is signed."""
        self.signed_events = 0
        self.problems: list[StreamProblem] = []
        self.headless: dict[tuple[str, str], int] = {}
        self.streams = 0
        self.events = 0
        self.events_by_tenant: dict[str, int] = {}
        self.key: tuple[str, str] | None = None
        self.next_version = 1
        self.prev_hash = GENESIS_HASH
        self.hash_at_head: bytes | None = None
        self.failed = False

    def feed(self, stored: StoredEvent) -> None:
        key = (stored.tenant_id, stored.stream_id)
        if key != self.key:
            self._close_stream()
            self.key, self.next_version, self.prev_hash, self.failed = key, 1, GENESIS_HASH, False
            self.hash_at_head = None
            self.signed = False
            self.streams += 1
        self.events += 1
        self.events_by_tenant[stored.tenant_id] = self.events_by_tenant.get(stored.tenant_id, 0) + 1
        if self.failed:
            return
        problem = self._check(stored)
        if problem is not None:
            self.problems.append(problem)
            self.failed = True
            return
        self._check_signature(stored)
        self.next_version += 1
        self.prev_hash = stored.hash
        head = self.heads.get(key)
        if head is not None and head["version"] == stored.version:
            self.hash_at_head = stored.hash

    def _check(self, stored: StoredEvent) -> StreamProblem | None:
        def problem(kind: str, version: int, detail: str) -> StreamProblem:
            return StreamProblem(tenant_id=stored.tenant_id, stream_id=stored.stream_id,
                                 version=version, kind=kind, detail=detail)

        if stored.damage is not None:
            return problem("unreadable_row", stored.version if stored.version else
                           self.next_version, stored.damage)
        if stored.version != self.next_version:
            return problem("missing_version", self.next_version,
                           f"version {self.next_version} is missing (next stored is "
                           f"{stored.version})")
        if stored.prev_hash != self.prev_hash:
            return problem("broken_link", stored.version,
                           "prev_hash does not match the previous event's hash")
        if recompute_hash(stored) != stored.hash:
            return problem("hash_mismatch", stored.version,
                           "the stored bytes do not hash to the stored hash")
        return None

    def _check_signature(self, stored: StoredEvent) -> None:
        """Report an event that is not the application's (``forged``, ``unsigned``): each
        one, the stream's chain checked on."""
        found = signature_finding(self.keys, stored, signed_before=self.signed,
                                  start=self.starts.get(stored.tenant_id))
        if found is not None:
            self._problem((stored.tenant_id, stored.stream_id), stored.version, *found)
        if stored.signature is not None:
            self.signed = True
            self.signed_events += 1

    def check_home(self, stored: StoredEvent, home: str | None) -> None:
        """Report an event found outside the one stream it belongs to (a forged stream
        whose events would fold into another subject's view rows)."""
        if home is not None and home != stored.stream_id:
            self._problem((stored.tenant_id, stored.stream_id), stored.version, "wrong_stream",
                          f"a {stored.type!r} event that belongs to stream {home!r}"[:300])

    def undecodable(self, stored: StoredEvent, error: CorruptEvent) -> None:
        """Report an event whose bytes hash right but do not decode as its type (every read
        of it raises `CorruptEvent`): each such event, its chain checked on."""
        self._problem((stored.tenant_id, stored.stream_id), stored.version,
                      "undecodable_event",
                      f"a {stored.type!r} event does not decode as its type: "
                      f"{error.detail}"[:300])

    def _close_stream(self) -> None:
        if self.key is None:
            return
        head = self.heads.pop(self.key, None)
        last = self.next_version - 1
        if self.failed:
            return
        if head is None:
            if self.keeps_heads:
                self.headless[self.key] = last
            return
        if head["version"] > last:
            self._problem(self.key, last + 1, "truncated",
                          f"the chain ends at version {last}, its head records {head['version']}")
        elif head["head_hash"] != self.hash_at_head:
            self._problem(self.key, head["version"], "head_mismatch",
                          "the stream head row does not match the chain")

    def still_headless(self, key: tuple[str, str]) -> None:
        """Report a stream that has events and, read again after the scan, no head row."""
        self._problem(key, self.headless[key], "head_mismatch",
                      "events are stored but the stream has no head row")

    def _problem(self, key: tuple[str, str], version: int, kind: str, detail: str) -> None:
        self.problems.append(StreamProblem(tenant_id=key[0], stream_id=key[1],
                                           version=version, kind=kind, detail=detail))

    def check_counts(self, stored_before: dict[str, int]) -> None:
        """Report each tenant whose scan read fewer events than were stored before it began
        (a live log only grows), so a reader that drops events can never report ok."""
        for tenant, stored in sorted(stored_before.items()):
            read = self.events_by_tenant.get(tenant, 0)
            if read < stored:
                self._problem((tenant, ""), 0, "unread_events",
                              f"the scan read {read} events of tenant {tenant!r}, "
                              f"{stored} were stored before it began")

    def end_scan(self) -> None:
        """The scan is over: close the last stream."""
        self._close_stream()
        self.key = None

    def finish(self) -> VerifyReport:
        for (tenant_id, stream_id), head in sorted(self.heads.items()):
            self.streams += 1
            self._problem((tenant_id, stream_id), 1, "truncated",
                          f"no events are stored, its head records version {head['version']}")
        self.problems.sort(key=lambda problem: (problem.tenant_id, problem.stream_id))
        return VerifyReport(streams=self.streams, events=self.events, problems=self.problems,
                            **signing_of(self))
