"""Moving a tenant's log between databases: export to JSON Lines, import into another log.

The copy is exact: every event keeps its id, stream, version, recorded time, stored bytes
and hashes, so its hash chains verify in the new database; only the global positions are
new (the hash never covers them). The views are folded afresh by the importing log's
projections in the same order as the source, and state blobs travel with the events.

The file (format ``checkpoint-eventlog/export``, version 1) is JSON Lines:

- a header ``{"format", "version", "tenant", "session", "with_state", "exported_at",
  "source"}``;
- ``{"kind": "event", "stream", "version", "id", "type", "recorded_at" (microseconds
  since the Unix epoch, UTC), "data" (the stored bytes, base64), "prev_hash", "hash"
  (hex), "position" (in the source; informational), "actor" (who appended it) only
  when the event names one, and "signature" (hex: the writer key's id and signature of
  the hash, `eventlog.writer_keys`) only when the event is signed}`` in the source's log
  order. An import stores each signature as recorded, after checking it holds under the
  target's writer keys (when it has any): it never stores one it cannot stand behind;
- ``{"kind": "blob", "digest", "refs", "data" (base64)}`` right before the first event
  that references the blob (`Event.blob_digests`), so an import commits each blob
  together with that event; a blob no exported event references comes last (an import
  stores it with its ``refs`` unless the target holds it); ``refs`` is at least 1, but
  may be 0 for a blob of at most three bytes, which is never counted
  (`eventlog.hashing.TOLD_BY_DIGEST`);
- on an encrypted log, ``{"kind": "key", "subject", "generation", "kek_id", "wrapped"
  (base64, or null once erased), "created_at", "erased_at"}`` for each data key of the
  exported subjects (a whole tenant's every key; a session's, the subjects its sealed
  bytes name), after the events: wrapped under the keyring's key-encryption key, so the
  file holds no key in the clear and the copy reads with the same keyring. An erased
  subject's rows carry no key and say when: it stays erased wherever it is imported;
- a footer ``{"kind": "end", "events", "blobs", "keys"}``: a file without it is truncated
  and refused.

An export is whole or it is not written: before reading, it takes every stream's head
version from the stream-heads view (committed in the same transaction as the events),
waits up to ``max_wait`` seconds until everything committed by then is readable in log
order (`EventLog.wait_readable`: on PostgreSQL, every transaction running at the call
has ended), and after reading checks that it read every stream up to that head. If a
transaction still open hides some of them, the export raises `ExportIncomplete` before
the end record, so no file that looks complete is ever written short (the CLI writes to
a temporary file and renames it only when whole).

Importing is idempotent: a stream whose events the target already holds (same version,
same hash) is skipped, and a target stream that is a prefix of the file's is extended,
so importing a file twice, or a later export of the same tenant, never doubles anything.
A target stream whose history differs from the file's is refused before anything is
written (`ImportRefused`).

State withheld: a file exported without state carries no blob. Importing it records, in
the transaction of its first events, a `StateWithheld` event (stream ``import:<id>``)
naming every blob its new events name that the target does not hold (and its own events
do not already name), so that `verify` reports those as withheld (a notice) and any other
missing blob as a finding. Export and import both count the withheld blobs (``blobs_withheld``).

Blob reference counts come from the source: a whole-tenant export carries each blob's
count, a session export the number of that session's live checkpoints that reference
it. Purged state (deleted sessions) is never exported.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import msgspec

from eventlog._logging import get_logger
from eventlog.clock import read_clock
from eventlog.crypto._keyring import KeyProvider
from eventlog.errors import EventLogError, ForgedEvent, InvalidInput, ReleaseNotHeld
from eventlog.errors import ExportIncomplete as ExportIncomplete  # defined with every error
from eventlog.errors import ImportRefused as ImportRefused
from eventlog.events import Event, EventRegistry, fold_blob_references, release_beyond
from eventlog.events.erasure import ERASURE_STREAM_PREFIX
from eventlog.events.interrupts import BatchCreated
from eventlog.events.threads import THREAD_STREAM_PREFIX, ThreadEvent
from eventlog.events.transfer import IMPORT_STREAM_PREFIX, StateWithheld
from eventlog.hashing import GENESIS_HASH, content_digest, recompute_hash, to_micros, uncounted
from eventlog.ids import uuid7
from eventlog.log import DEFAULT_MAX_PAYLOAD_BYTES, EventLog, KeyRow
from eventlog.log._erasures import ERASURE_TYPE, Erasure, fold_erasure
from eventlog.log._sealing import Sealer, context_of, sealed_blob_header, sealed_subjects
from eventlog.log._signed import signature_finding
from eventlog.records import RecordedEvent, StoredEvent
from eventlog.validation import check_actor, check_id, check_optional_id
from eventlog.writer_keys import SIGNATURE_SIZE, WriterKeys
from projections.checkpoints import CHECKPOINTS
from projections.query import ViewQuery
from projections.thread_holdings import ThreadHoldings
from projections.views import STREAM_HEADS

logger = get_logger(__name__)

FORMAT = "checkpoint-eventlog/export"
FORMAT_VERSION = 2
"""Version 2 (migration 0032): thread puts may be stored compact, which the code that
wrote version 1 would misread; it refuses a version it does not know."""
READ_VERSIONS = (1, FORMAT_VERSION)
"""The versions an import reads: a version 1 file holds every put written out."""

Progress = Callable[[str, int, int | None], None]
"""Called as ``(phase, done, total)`` while exporting or importing (total may be None)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PAGE = 1000
_MAX_GROUP = 256  # events (of one or many streams) committed in one batch while importing
_GROUP_BYTES = 32 * 1024 * 1024
"""Event and blob bytes past which an import commits its batch (its memory stays flat)."""
_LINE_SLACK = 64 * 1024
"""What a line of the file may hold beyond its base64 payload (ids, hashes, keys)."""
_WITHHELD_PER_EVENT = 1000  # digests named by one StateWithheld event (about 66 kB)
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What `export_log` wrote."""

    tenant_id: str
    session_id: str | None
    with_state: bool
    events: int
    streams: int
    blobs: int
    blob_bytes: int
    blobs_withheld: int = 0
    """Blobs the exported events reference that a ``with_state=False`` export left out."""
    keys: int = 0
    """Data key rows carried (an encrypted log's: wrapped, or erased)."""


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What `import_log` did: events written, events the target already held, and
    ``blobs_imported``, how many distinct blobs of the file the new events took (each
    counted once, as the export counts the blobs it writes)."""

    tenant_id: str
    session_id: str | None
    events_imported: int
    events_present: int
    streams_imported: int
    blobs_imported: int
    blobs_withheld: int = 0
    """Blobs the imported events reference that the file left out and the target does
    not hold, recorded as withheld (`StateWithheld`)."""


class SessionMembership:
    """Which streams hold one session's history, learned while reading the log in order.

    A session's checkpoints are on the stream whose events name the session, a framework
    thread of the same id on the stream whose events name it as their thread; its interrupt
    batches are the streams whose `BatchCreated` names it as the thread. A batch's
    creation comes first in its stream and in log order, so reading the log in order
    learns every batch stream before any of its other events.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.streams: set[str] = set()
        self.order: list[str] = []
        """The session's streams in the order their first event was seen."""

    def includes(self, event: RecordedEvent) -> bool:
        """Whether ``event`` belongs to the session (learning new streams as it goes)."""
        if event.stream_id in self.streams:
            return True
        payload = event.event
        named: object = (
            payload.thread_id if isinstance(payload, BatchCreated | ThreadEvent)
            else getattr(payload, "session_id", None)
        )
        if named != self.session_id:
            return False
        self.streams.add(event.stream_id)
        self.order.append(event.stream_id)
        return True


# -- export ----------------------------------------------------------------------------------


async def export_log(
    log: EventLog,
    sink: IO[bytes],
    *,
    tenant_id: str,
    session_id: str | None = None,
    with_state: bool = True,
    progress: Progress | None = None,
    max_wait: float = 30.0,
) -> ExportSummary:
    """Write one tenant's history (or one session's) to ``sink`` as JSON Lines.

    Waits up to ``max_wait`` seconds for the events committed before the call to become
    readable (see the module docstring), and raises `ExportIncomplete` before writing the
    end record if any stream of the tenant was read short of the head it had then.
    Raises `InvalidInput` naming ``tenant_id`` when the tenant has no events, or naming
    ``max_wait`` when it is negative.
    """
    check_id("tenant_id", tenant_id)
    check_optional_id("session_id", session_id)
    log = log.as_stored()  # an encrypted log's blobs travel as the ciphertext they are
    if isinstance(max_wait, bool) or not isinstance(max_wait, int | float) or not (
            max_wait >= 0):
        raise InvalidInput("max_wait", f"must be a number of seconds ≥ 0, not {max_wait!r}")
    heads = await stream_versions(log, tenant_id)
    total = sum(heads.values())
    if total == 0:
        raise InvalidInput("tenant_id", f"tenant {tenant_id!r} has no events in this log")
    try:
        await log.wait_readable(max_wait)
    except EventLogError as error:  # the read below finds what is missing, if anything
        logger.warning("export_wait_failed", tenant=tenant_id, error=str(error))
    blobs = await _blob_refs(log, tenant_id, session_id)
    writer = _ExportWriter(log, sink, tenant_id, blobs, carry=with_state)
    writer.line({
        "format": FORMAT, "version": FORMAT_VERSION, "tenant": tenant_id,
        "session": session_id, "with_state": with_state,
        "exported_at": read_clock(log.clock).isoformat(), "source": log.backend_name,
    })
    membership = SessionMembership(session_id) if session_id is not None else None
    scanned = 0
    read: dict[str, int] = {}
    async for event in _tenant_events(log, tenant_id):
        scanned += 1
        read[event.stream_id] = max(read.get(event.stream_id, 0), event.version)
        # A record of withheld state goes with every session export: it covers
        # whichever of the session's blobs its import withheld.
        if membership is None or membership.includes(event) or isinstance(
                event.event, StateWithheld):
            await writer.event(event)
        if progress is not None and scanned % _PAGE == 0:
            progress("export", scanned, total)
    missing = {stream: (version, read.get(stream, 0)) for stream, version in heads.items()
               if read.get(stream, 0) < version}
    if missing:
        # Every stream is compared (a session's too: its batch streams are known only
        # from events that may be the unread ones), and no end record is written.
        raise ExportIncomplete(tenant_id, total, scanned, missing, max_wait)
    if membership is not None:
        await _erasure_records(log, writer, tenant_id)
    await writer.remaining_blobs()
    keys = await _export_keys(log, writer, tenant_id, session_id)
    writer.line({"kind": "end", "events": writer.events, "blobs": writer.blobs,
                 **({"keys": keys} if keys else {})})
    if progress is not None:
        progress("export", scanned, total)
    logger.info("exported", tenant=tenant_id, session=session_id, events=writer.events,
                blobs=writer.blobs)
    return ExportSummary(
        tenant_id=tenant_id, session_id=session_id, with_state=with_state,
        events=writer.events, streams=len(writer.streams), blobs=writer.blobs,
        blob_bytes=writer.blob_bytes, blobs_withheld=writer.withheld, keys=keys,
    )


async def _erasure_records(log: EventLog, writer: _ExportWriter, tenant_id: str) -> None:
    """A session's export carries the erasure streams of the subjects it names, whole
    (after its own events): an import takes an erased key line only with the erasure
    record that erases it."""
    for subject in sorted(writer.subjects):
        stream = ERASURE_STREAM_PREFIX + subject
        if stream not in writer.streams:
            async for event in log.read_stream(tenant_id, stream):
                await writer.event(event)


class _ExportWriter:
    """Writes lines, placing each blob right before the first event naming its digest
    (or, when not ``carry``ing state, counting it as withheld)."""

    def __init__(
        self, log: EventLog, sink: IO[bytes], tenant_id: str, blobs: dict[bytes, int],
        *, carry: bool = True,
    ) -> None:
        self.log, self.sink, self.tenant_id, self.carry = log, sink, tenant_id, carry
        self.pending = blobs
        self.events = self.blobs = self.blob_bytes = self.withheld = 0
        self.streams: set[str] = set()
        self.subjects: set[str] = set()
        """The subjects whose sealed bytes or erasure records were written (whose keys
        the file carries)."""
        self.erasures: dict[str, Erasure] = {}
        """The erasures the written erasure streams record, by subject (each stream is
        written whole: what the file's key lines must agree with)."""

    def line(self, record: dict[str, Any]) -> None:
        self.sink.write(_encoder.encode(record) + b"\n")

    async def event(self, event: RecordedEvent) -> None:
        self.subjects.update(sealed_subjects(self.log.registry.sealed_fields(event.type),
                                             event.data))
        if event.stream_id.startswith(ERASURE_STREAM_PREFIX):
            subject = event.stream_id[len(ERASURE_STREAM_PREFIX):]
            self.subjects.add(subject)
            self.erasures[subject] = fold_erasure(self.erasures.get(subject, Erasure()),
                                                  event)
        for digest in event.event.blob_digests():
            await self.blob(digest)
        self.line({
            "kind": "event", "stream": event.stream_id, "version": event.version,
            "id": str(event.event_id), "type": event.type,
            "recorded_at": to_micros(event.recorded_at),
            "data": base64.b64encode(event.data).decode(), "prev_hash": event.prev_hash.hex(),
            "hash": event.hash.hex(), "position": event.position,
            **({} if event.actor is None else {"actor": event.actor}),
            **({} if event.signature is None else {"signature": event.signature.hex()}),
        })
        self.events += 1
        self.streams.add(event.stream_id)

    async def blob(self, digest: bytes) -> None:
        refs = self.pending.pop(digest, None)
        if refs is None:
            return
        if not self.carry:
            self.withheld += 1
            return
        payload = await self.log.get_blob(self.tenant_id, digest)
        if payload is None:  # purged since we listed it
            return
        header = sealed_blob_header(payload)
        if header is not None:
            self.subjects.add(header.subject)
        self.line({"kind": "blob", "digest": digest.hex(), "refs": refs,
                   "data": base64.b64encode(payload).decode()})
        self.blobs += 1
        self.blob_bytes += len(payload)

    async def remaining_blobs(self) -> None:
        if not self.carry:
            return  # no event names them: nothing the copy will miss
        for digest in sorted(self.pending):
            await self.blob(digest)


async def _export_keys(log: EventLog, writer: _ExportWriter, tenant_id: str,
                       session_id: str | None) -> int:
    """Write the key records: the rows of the subjects the written events' sealed bytes
    and blobs name, and of those whose erasure they carry (an import takes keys for no
    other subject); how many. Wrapped keys only, never a key in the clear, and as the log
    has them: a key the file's erasure records erased goes as erased, whatever the key
    table holds (a row written back from a backup is never handed on)."""
    if session_id is None:  # the tenant's rows, as the key table holds them
        rows = [row for row in await log.subject_keys(tenant_id, page=_PAGE, as_stored=True)
                if row.subject in writer.subjects]
    else:
        rows = [row for subject in sorted(writer.subjects)
                for row in await log.subject_keys(tenant_id, subject, as_stored=True)]
    for row in rows:
        erasure = writer.erasures.get(row.subject)
        if erasure is not None and row.wrapped is not None and (
                row.generation <= erasure.through):
            row = dataclasses.replace(row, wrapped=None, erased_at=row.erased_at or erasure.at)
        writer.line(key_record(row))
    return len(rows)


def key_record(row: KeyRow) -> dict[str, Any]:
    """A key row as an export line."""
    return {"kind": "key", "subject": row.subject, "generation": row.generation,
            "kek_id": row.kek_id,
            "wrapped": None if row.wrapped is None else base64.b64encode(row.wrapped).decode(),
            "created_at": row.created_at.isoformat(),
            "erased_at": None if row.erased_at is None else row.erased_at.isoformat()}


def _key_of(record: dict[str, Any], number: int, tenant_id: str) -> KeyRow:
    try:
        wrapped = record["wrapped"]
        erased = record["erased_at"]
        row = KeyRow(tenant_id, check_id("subject", record["subject"]),
                     _whole(record["generation"]), str(record["kek_id"]),
                     None if wrapped is None else base64.b64decode(wrapped, validate=True),
                     datetime.fromisoformat(record["created_at"]),
                     None if erased is None else datetime.fromisoformat(erased))
    except (KeyError, TypeError, ValueError, binascii.Error, InvalidInput) as error:
        raise InvalidInput("file", f"line {number}: a malformed key ({error})") from None
    if row.generation < 1 or (row.wrapped is None) != (row.erased_at is not None):
        raise InvalidInput("file", f"line {number}: key {row.subject!r} generation "
                                   f"{row.generation} is neither held nor erased")
    return row


async def _plan_keys(log: EventLog, plan: _FilePlan) -> None:
    """Refuse a file whose data key differs from one the target holds for the same
    subject and generation (its ciphertext would not open there); leave out the keys the
    target's log erased (its erasure stream decides, whatever its key table holds); and
    keep the erasures to carry out: a key the target holds that an erasure event of the
    file erases (signed, where the target's events are), destroyed once that event is in."""
    tenant: str = plan.header["tenant"]
    kept = []
    for row in plan.keys:
        if row.wrapped is not None and row.generation <= (
                await log.erasure_of(tenant, row.subject)).through:
            continue  # erased here, which it stays
        kept.append(row)
        held = {have.generation: have for have in await log.subject_keys(
            row.tenant_id, row.subject, as_stored=True)}.get(row.generation)
        if held is None or held.wrapped is None or row.wrapped is None:
            continue  # new here; or erased here, which it stays
        if held.kek_id == row.kek_id and held.wrapped != row.wrapped:
            raise ImportRefused(f"key:{row.subject}", row.generation, (
                "the target holds another data key for this subject and generation: its "
                "ciphertext would not open; nothing was imported"))
    plan.keys = kept
    signs = bool(log.writer_keys) or await log.signed.signing_start(tenant) is not None
    for subject, erasure in sorted(plan.erasures.items()):
        if not [row for row in await log.subject_keys(tenant, subject, as_stored=True)
                if row.wrapped is not None and row.generation <= erasure.through]:
            continue
        if signs and not plan.erasure_signed.get(subject, False):
            raise ImportRefused(f"{ERASURE_STREAM_PREFIX}{subject}", erasure.version, (
                "the file's erasure record is not signed, and this log's events are: it "
                "erases only on its writer key's record; nothing was imported"))
        if signs and not log.writer_keys:
            raise ImportRefused(f"{ERASURE_STREAM_PREFIX}{subject}", erasure.version, (
                "the file's erasure record would destroy a key this log holds, and its "
                "signature cannot be checked without the writer key: import with the "
                "keyring (or writer_keys=); nothing was imported"))
        assert erasure.at is not None
        plan.erase[subject] = erasure.at


async def _store_keys(log: EventLog, plan: _FilePlan) -> None:
    """Add the file's key rows the target lacks (before any event: no imported event is
    ever without its key)."""
    await log.add_subject_keys(plan.header["tenant"], plan.keys)


async def _erase_keys(log: EventLog, plan: _FilePlan, sealer: Sealer | None) -> None:
    """Destroy the target's keys that the file's erasure events erase, once those events
    are in the target's log (which already refuses the keys as erased: this is the key
    table catching up)."""
    for subject, at in sorted(plan.erase.items()):
        await log.destroy_subject_keys(plan.header["tenant"], subject, at)
        if sealer is not None:
            sealer.forget(plan.header["tenant"], subject)


async def _blob_refs(log: EventLog, tenant_id: str, session_id: str | None) -> dict[bytes, int]:
    if session_id is None:
        return await log.blob_refs(tenant_id)
    rows = await log.query(ViewQuery(
        CHECKPOINTS, {"tenant_id": tenant_id, "session_id": session_id},
        columns=("state_digest",),
    ))
    counts = Counter(bytes(row["state_digest"]) for row in rows)
    counts.update(await _thread_blob_refs(log, tenant_id, session_id))
    return dict(counts)


async def _thread_blob_refs(log: EventLog, tenant_id: str, thread_id: str) -> Counter[bytes]:
    """The live blob references of the framework thread of this id: its puts', its stored
    channel values' and its writes' (folded from its events as the export carries them:
    unchecked, as an export is no decision, and a forged event travels to be named by the
    importing side's checks)."""
    holdings = ThreadHoldings()
    async for recorded in log.read_stream(tenant_id, THREAD_STREAM_PREFIX + thread_id):
        holdings.fold(recorded.event)
    return Counter(holdings.everything())


async def count_events(log: EventLog, tenant_id: str | None = None) -> int:
    """How many events the log holds (for one tenant), from the stream-heads view."""
    where = {} if tenant_id is None else {"tenant_id": tenant_id}
    rows = await log.query(ViewQuery(STREAM_HEADS, where, columns=("version",)))
    return sum(int(row["version"]) for row in rows)


async def stream_versions(log: EventLog, tenant_id: str) -> dict[str, int]:
    """Each stream of the tenant and its version, from the stream-heads view (committed
    with the events, so it already shows events `read_all` may not return yet)."""
    rows = await log.query(ViewQuery(STREAM_HEADS, {"tenant_id": tenant_id},
                                     columns=("stream_id", "version")))
    return {str(row["stream_id"]): int(row["version"]) for row in rows}


async def _tenant_events(log: EventLog, tenant_id: str) -> AsyncIterator[RecordedEvent]:
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=_PAGE, tenant_id=tenant_id)
        for event in page.events:
            yield event
        if not page.events:
            return
        cursor = page.cursor


# -- import ----------------------------------------------------------------------------------


@dataclass
class _FilePlan:
    """What the first pass over a file learned: header, per-stream ends, what to skip."""

    header: dict[str, Any]
    events: int = 0
    last: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    at_target_head: dict[str, bytes] = field(default_factory=dict)
    skip: dict[str, int] = field(default_factory=dict)
    new_digests: set[bytes] = field(default_factory=set)
    """Blobs named by the events the target does not hold yet."""
    present_digests: set[bytes] = field(default_factory=set)
    """Blobs named by the events the target already holds."""
    live: dict[str, Counter[bytes]] = field(default_factory=dict)
    """The references each stream's events hold at the end of the file."""
    keys: list[KeyRow] = field(default_factory=list)
    """The file's data key rows (an encrypted log's)."""
    key_lines: list[int] = field(default_factory=list)
    """The line of each of ``keys``."""
    erase: dict[str, datetime] = field(default_factory=dict)
    """Subjects whose erasure the file carries whose key the target still holds, and the
    time of that erasure: their keys are destroyed once the events are in."""
    subjects: set[str] = field(default_factory=set)
    """The subjects the file's events' sealed bytes and its blobs name."""
    erasures: dict[str, Erasure] = field(default_factory=dict)
    """The erasures the file's erasure streams record, by subject."""
    erasure_signed: dict[str, bool] = field(default_factory=dict)
    """Whether each subject's latest erasure record in the file is signed."""
    carried: set[bytes] = field(default_factory=set)
    """The digests of the file's blobs."""
    recorded_withheld: set[bytes] = field(default_factory=set)
    """Digests the file's own `StateWithheld` records name (absent by intent)."""
    signed: set[str] = field(default_factory=set)
    """Streams of the file with a signed event so far (a later unsigned one is refused)."""

    def withheld_candidates(self) -> list[bytes]:
        """Blobs the new events name, still referenced at the end of the file, that the
        target's own events do not name, sorted."""
        live = {digest for held in self.live.values() for digest, n in held.items() if n}
        return sorted((self.new_digests & live) - self.present_digests)


async def import_log(
    log: EventLog, source: IO[bytes], *, progress: Progress | None = None,
    registry: EventRegistry | None = None,
) -> ImportSummary:
    """Append the history in ``source`` (a seekable export file) to ``log``.

    Reads the file twice: first to check it whole (format, every chain link and hash,
    the footer) and against the target's streams, writing nothing if anything is wrong;
    then to append, in batches of many streams' events per transaction, each blob with
    the first event that names it. Raises `InvalidInput` naming ``file`` for a malformed,
    altered or truncated file (or one holding an event that does not decode with
    ``registry``, the log's unless given) and `ImportRefused` for a conflicting history.
    """
    sealer = log.sealer  # forgets the keys an import destroys
    log = log.as_stored()  # ciphertext is taken in as it is, with or without a keyring
    limit = line_limit(log.max_payload_bytes)
    header = _read_header(source, limit)
    heads = await _target_heads(log, header["tenant"])
    plan = _check_file(source, header, heads, registry or log.registry, limit,
                       log.writer_keys)
    await _plan_skips(log, plan, heads)
    _check_keys(plan, None if sealer is None else sealer.provider,
                await log.encrypted_under())
    missing = [digest for digest in _check_state(plan)
               if await log.get_blob(header["tenant"], digest) is None]
    if missing:
        count = f"{len(missing)} blob" + ("" if len(missing) == 1 else "s")
        raise InvalidInput("file", f"says it carries state (with_state), but lacks "
                                   f"{count} its events name and this log does not hold "
                                   "(the first: "
                                   f"{missing[0].hex()[:12]}…); nothing was imported")
    await _plan_keys(log, plan)
    await _store_keys(log, plan)
    tenant_id: str = plan.header["tenant"]
    importer = _Importer(log, tenant_id, plan, progress, _Rereader(source, limit))
    withheld = await importer.withhold()
    source.seek(0)
    for number, offset, record in _records(source, limit):
        if number > 1:
            await importer.feed(record, offset)
    await importer.adopt_unnamed()
    await importer.flush()
    await _erase_keys(log, plan, sealer)
    logger.info("imported", tenant=tenant_id, events=importer.imported,
                present=importer.present, blobs=len(importer.stored), withheld=withheld)
    return ImportSummary(
        tenant_id=tenant_id, session_id=plan.header.get("session"),
        events_imported=importer.imported, events_present=importer.present,
        streams_imported=len(importer.streams), blobs_imported=len(importer.stored),
        blobs_withheld=withheld,
    )


def check_export(
    source: IO[bytes], registry: EventRegistry | None = None, *,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> str:
    """Check an export file whole, without a log (format, every chain link and hash, the
    end record, and with ``registry`` that every event decodes and sits in its stream);
    return the tenant it holds. Raises `InvalidInput` naming ``file`` as `import_log`
    does, a line longer than a payload of ``max_payload_bytes`` (the importing log's)
    takes included. `import_log` checks all this again, and the target's streams too."""
    limit = line_limit(max_payload_bytes)
    header = _read_header(source, limit)
    _check_file(source, header, {}, registry, limit)
    tenant: str = header["tenant"]
    return tenant


def _read_header(source: IO[bytes], limit: int) -> dict[str, Any]:
    source.seek(0)
    for _number, _offset, record in _records(source, limit):
        if record.get("format") != FORMAT:
            raise InvalidInput("file", f"is not a {FORMAT} file (its first line says "
                                       f"{str(record.get('format'))[:60]!r})")
        version = record.get("version")
        if type(version) is not int or version not in READ_VERSIONS:  # JSON true == 1
            raise InvalidInput("file", f"has format version {record.get('version')!r}; "
                                       "this code reads versions "
                                       f"{', '.join(map(str, READ_VERSIONS))}")
        check_id("file tenant", record.get("tenant"))
        return record
    raise InvalidInput("file", "is empty")


async def _target_heads(log: EventLog, tenant_id: str) -> dict[str, dict[str, Any]]:
    rows = await log.query(ViewQuery(STREAM_HEADS, {"tenant_id": tenant_id}))
    return {row["stream_id"]: row for row in rows}


def _check_file(
    source: IO[bytes], header: dict[str, Any], heads: dict[str, dict[str, Any]],
    registry: EventRegistry | None, limit: int, writer_keys: WriterKeys | None = None,
) -> _FilePlan:
    """Check the whole file before anything is written: every record, link, hash and
    signature (`ForgedEvent` for one that does not hold under ``writer_keys``, or an
    unsigned event after a signed one of its stream), and with ``registry`` every event's
    bytes decode and it sits in the stream it belongs to."""
    plan = _FilePlan(header=header)
    counts = {"event": 0, "blob": 0, "key": 0}
    ended: dict[str, Any] | None = None
    source.seek(0)
    for number, _offset, record in _records(source, limit):
        if number == 1:
            continue
        if ended is not None:
            raise InvalidInput("file", f"line {number}: a record after the end record")
        kind = record.get("kind")
        if kind == "end":
            ended = record
        elif kind == "blob":
            digest, payload, _refs = _blob_of(record, number)
            plan.carried.add(digest)
            sealed = sealed_blob_header(payload)
            if sealed is not None:
                plan.subjects.add(sealed.subject)
            counts["blob"] += 1
        elif kind == "key":
            plan.keys.append(_key_of(record, number, plan.header["tenant"]))
            plan.key_lines.append(number)
            counts["key"] += 1
        elif kind == "event":
            stored = _event_of(record, number, plan.header["tenant"])
            _check_link(plan, stored, heads, number)
            _check_signature(plan, stored, writer_keys)
            _note_erasure(plan, stored)
            if registry is not None:
                plan.subjects.update(sealed_subjects(registry.sealed_fields(stored.type),
                                                     stored.data))
                event = _check_event(registry, stored, number)
                _check_held(plan, stored, event)
                if isinstance(event, StateWithheld):
                    plan.recorded_withheld.update(_withheld_digests(event))
                named = event.blob_digests()
                head = heads.get(stored.stream_id)
                if head is None or stored.version > int(head["version"]):
                    plan.new_digests.update(named)
                else:
                    plan.present_digests.update(named)
            counts["event"] += 1
        else:
            raise InvalidInput("file", f"line {number}: unknown record kind {kind!r}")
    if ended is None:
        raise InvalidInput("file", "has no end record: it is truncated")
    if (ended.get("events"), ended.get("blobs"), ended.get("keys", 0)) != (
            counts["event"], counts["blob"], counts["key"]):
        raise InvalidInput("file", "its end record does not match its contents: "
                                   f"{counts['event']} events, {counts['blob']} blobs and "
                                   f"{counts['key']} keys found")
    plan.events = counts["event"]
    return plan


def _note_erasure(plan: _FilePlan, stored: StoredEvent) -> None:
    """Fold an event of an erasure stream into the file's erasures (its streams start at
    version 1 and were checked in order)."""
    if not stored.stream_id.startswith(ERASURE_STREAM_PREFIX):
        return
    subject = stored.stream_id[len(ERASURE_STREAM_PREFIX):]
    plan.erasures[subject] = fold_erasure(plan.erasures.get(subject, Erasure()), stored)
    if stored.type == ERASURE_TYPE:
        # The latest erasure erases through the highest generation: it is the record an
        # erasure of the target's keys rests on (an earlier one may predate signing).
        plan.erasure_signed[subject] = stored.signature is not None


def _check_keys(plan: _FilePlan, provider: KeyProvider | None,
                kek_ids: tuple[str, ...]) -> None:
    """Refuse (`InvalidInput` naming ``file`` and the line) a key line the file's events do
    not account for, before anything is written: a key of a subject no event or blob of the
    file names; one marked erased without an erasure event of the file that erases it; one
    holding a key the file's own erasure erased; and one that is not a data key of that
    tenant, subject and generation (with the keyring: it does not unwrap under its
    context; without: it names a key-encryption key the target is not encrypted under)."""
    tenant = plan.header["tenant"]
    for row, number in zip(plan.keys, plan.key_lines, strict=True):
        subject, generation = row.subject, row.generation
        through = plan.erasures.get(subject, Erasure()).through

        def refuse(why: str, *, number: int = number, subject: str = subject,
                   generation: int = generation) -> InvalidInput:
            return InvalidInput("file", f"line {number}: the key of subject {subject!r} "
                                        f"generation {generation} {why}; nothing was "
                                        "imported"[:400])

        if subject not in plan.subjects and subject not in plan.erasures:
            raise refuse("belongs to no event or blob of the file (an import brings keys "
                         "only for the subjects whose events it brings)")
        if row.wrapped is None:
            if generation > through:
                raise refuse("is marked erased, but the file carries no erasure event "
                             "that erases it (an import erases only with the erasure record "
                             "it carries)")
            continue
        if generation <= through:
            raise refuse("holds a key that the file's own erasure event erased")
        if provider is not None:
            try:
                provider.unwrap(row.wrapped, context_of(tenant, subject, generation))
            except Exception:
                raise refuse(f"does not unwrap under the keyring {provider.key_id!r} as a "
                             f"data key of tenant {tenant!r} (junk, or another tenant's or "
                             "subject's key)") from None
        elif kek_ids and row.kek_id not in kek_ids:
            raise refuse(f"is wrapped under {row.kek_id!r}, a key-encryption key this log "
                         f"is not encrypted under ({', '.join(kek_ids)})")


def _check_state(plan: _FilePlan) -> list[bytes]:
    """The blobs a file exported with state promises and does not carry: named by its new
    events, still referenced at its end, not among its blob records and not recorded as
    withheld by an earlier import's record it carries (the import then asks whether the
    target holds them)."""
    if not plan.header.get("with_state", True):
        return []
    return [digest for digest in plan.withheld_candidates()
            if digest not in plan.carried and digest not in plan.recorded_withheld]


def _withheld_digests(event: StateWithheld) -> set[bytes]:
    found = set()
    for text in event.digests:
        try:
            found.add(bytes.fromhex(text))
        except ValueError:
            continue  # not a digest: it withholds nothing
    return found


def _check_link(plan: _FilePlan, stored: StoredEvent, heads: dict[str, Any], number: int) -> None:
    version, prev = plan.last.get(stored.stream_id, (0, GENESIS_HASH))
    if stored.version != version + 1 or stored.prev_hash != prev:
        raise InvalidInput("file", f"line {number}: stream {stored.stream_id!r} version "
                                   f"{stored.version} does not follow version {version}")
    if recompute_hash(stored) != stored.hash:
        raise InvalidInput("file", f"line {number}: stream {stored.stream_id!r} version "
                                   f"{stored.version} does not hash to its recorded hash "
                                   "(the file was altered)")
    plan.last[stored.stream_id] = (stored.version, stored.hash)
    head = heads.get(stored.stream_id)
    if head is not None and int(head["version"]) == stored.version:
        plan.at_target_head[stored.stream_id] = stored.hash


def _check_signature(plan: _FilePlan, stored: StoredEvent, keys: WriterKeys | None) -> None:
    """`ForgedEvent` for an event whose signature does not hold under ``keys``, or that is
    unsigned after a signed event of its stream (the file's own events, from version 1)."""
    found = signature_finding(keys or None, stored,
                              signed_before=stored.stream_id in plan.signed, start=None)
    if found is not None:
        raise ForgedEvent(stored.tenant_id, stored.stream_id, stored.version, *found)
    if stored.signature is not None:
        plan.signed.add(stored.stream_id)


def _check_event(registry: EventRegistry, stored: StoredEvent, number: int) -> Event:
    """The event, which decodes and sits in its home stream (a forged batch or session
    stream would fold into another subject's view rows)."""
    try:
        event = registry.decode(stored.type, stored.data, stream_id=stored.stream_id,
                                version=stored.version)
    except EventLogError as error:
        raise InvalidInput("file", f"line {number}: {error}"[:300]) from None
    home = event.home_stream()
    if home is not None and home != stored.stream_id:
        raise InvalidInput("file", f"line {number}: a {stored.type!r} event of stream "
                                   f"{home!r} sits in stream {stored.stream_id!r}"[:300])
    return event


def _check_held(plan: _FilePlan, stored: StoredEvent, event: Event) -> None:
    """An event gives up only blob references its stream's earlier events (or itself)
    name: every stream of a file starts at version 1, so a file whose tombstone releases
    another stream's state is refused (`ReleaseNotHeld`) before anything is written."""
    released = event.blob_releases()
    if released == {} and not event.blob_digests():
        return
    held = plan.live.setdefault(stored.stream_id, Counter())
    if released:
        holds = held + Counter(event.blob_digests())
        digest = release_beyond(holds, released)
        if digest is not None:
            raise ReleaseNotHeld(stored.stream_id, digest, released[digest], holds[digest])
    fold_blob_references(held, event)


async def _plan_skips(log: EventLog, plan: _FilePlan, heads: dict[str, dict[str, Any]]) -> None:
    """Decide, per stream, how many leading events the target already holds."""
    tenant_id: str = plan.header["tenant"]
    for stream_id, (last_version, last_hash) in plan.last.items():
        head = heads.get(stream_id)
        if head is None:
            continue
        version, head_hash = int(head["version"]), bytes(head["head_hash"])
        if version <= last_version:
            if plan.at_target_head.get(stream_id) != head_hash:
                raise ImportRefused(stream_id, version, "the target's event differs from the "
                                    "file's (a different history); nothing was imported")
            plan.skip[stream_id] = version
            continue
        ours = [event async for event in log.read_stream(
            tenant_id, stream_id, last_version, limit=1
        )]
        if not ours or ours[0].hash != last_hash:
            raise ImportRefused(stream_id, last_version, "the target's event differs from "
                                "the file's (a different history); nothing was imported")
        plan.skip[stream_id] = last_version


class _Importer:
    """The second pass: appends the new events in batches (`EventLog.append_recorded`),
    one transaction per batch of up to ``_MAX_GROUP`` events of any number of streams.

    Blob references come from the events themselves (`Event.blob_digests` adds one each,
    `Event.blob_releases` gives them up), never from the file's per-blob counts: a blob
    record sits before the first event naming it, which may be an event the target
    already holds while a later, new event names the same blob again.

    Memory stays flat whatever the file holds: a blob's bytes are kept from its record
    to the next event only, then only while the batch that stores them is open (a batch
    is also committed once it holds ``_GROUP_BYTES``). A later event naming a blob again
    reads it back from the file, where its record's offset was noted, or else from the
    target.
    """

    def __init__(
        self, log: EventLog, tenant_id: str, plan: _FilePlan, progress: Progress | None,
        file: _Rereader,
    ) -> None:
        self.log, self.tenant_id, self.plan, self.progress = log, tenant_id, plan, progress
        self.file = file
        self.group: list[StoredEvent] = []
        self.group_streams: set[str] = set()
        self.group_bytes = 0
        self.adds: Counter[bytes] = Counter()
        self.releases: Counter[bytes] = Counter()
        self.payloads: dict[bytes, bytes] = {}
        """The blobs read since the last event (the next one names them)."""
        self.group_blobs: dict[bytes, bytes] = {}
        """The blobs the open batch stores."""
        self.offsets: dict[bytes, int] = {}
        """Where each blob's record starts in the file."""
        self.live: dict[str, Counter[bytes]] = {}
        self.unheld: dict[str, Counter[bytes]] = {}
        self.imported = self.present = 0
        self.carried: dict[bytes, int] = {}
        """The blobs the file carries (the ones its export counted): digest → its refs."""
        self.named: set[bytes] = set()
        """Digests the file's events name (`Event.blob_digests`)."""
        self.stored: set[bytes] = set()
        """Digests of the file's blobs this import gave references to."""
        self.streams: set[str] = set()
        self.record = ""
        """The stream of this import's own record (`StateWithheld`), if it writes one."""

    async def feed(self, record: dict[str, Any], offset: int) -> None:
        kind = record["kind"]
        if kind == "blob":
            digest, payload, refs = _blob_of(record, 0)
            self.payloads[digest] = payload
            self.carried[digest] = refs
            self.offsets.setdefault(digest, offset)
        elif kind == "event":
            await self.event(_event_of(record, 0, self.tenant_id))
            self.payloads.clear()  # what the event did not take is read again if named

    async def event(self, stored: StoredEvent) -> None:
        event = self.log.decode(stored).event
        self.named.update(event.blob_digests())
        live = self.live.setdefault(stored.stream_id, Counter())
        if stored.version <= self.plan.skip.get(stored.stream_id, 0):
            self.present += 1
            fold_blob_references(live, event)  # the target holds this event's references
            self._report()
            return
        if self.group and (len(self.group) >= _MAX_GROUP or self.group_bytes >= _GROUP_BYTES
                           or (stored.stream_id in self.group_streams
                               and self.group[-1].stream_id != stored.stream_id)):
            await self.flush()
        self.group_streams.add(stored.stream_id)
        self.group.append(stored)
        self.group_bytes += len(stored.data)
        unheld = self.unheld.setdefault(stored.stream_id, Counter())
        for digest in event.blob_digests():
            payload = await self._payload(digest)
            if payload is None:
                unheld[digest] += 1  # purged at the source: no state to hold
                continue
            if digest not in self.group_blobs:
                self.group_blobs[digest] = payload
                self.group_bytes += len(payload)
            self.adds[digest] += 1
        released = event.blob_releases()
        for digest, count in (dict(live) if released is None else released).items():
            skipped = min(count, unheld[digest])
            unheld[digest] -= skipped
            if count > skipped:
                self.releases[digest] += count - skipped
        fold_blob_references(live, event)

    async def _payload(self, digest: bytes) -> bytes | None:
        """The blob's bytes: just read, in the open batch, read again from the file (which
        carries it), or the target's; None if none holds it."""
        for held in (self.payloads, self.group_blobs):
            if digest in held:
                return held[digest]
        offset = self.offsets.get(digest)
        if offset is not None:
            return _blob_of(self.file.record_at(offset), 0)[1]
        return await self.log.get_blob(self.tenant_id, digest)

    async def flush(self) -> None:
        if not self.group:
            return
        blobs = {digest: (self.group_blobs[digest], count) for digest, count in self.adds.items()}
        await self.log.append_recorded(self.tenant_id, self.group, blobs=blobs,
                                       release=dict(self.releases) or None)
        self.imported += sum(1 for event in self.group if event.stream_id != self.record)
        self.stored.update(digest for digest in blobs if digest in self.carried)
        self.streams.update(self.group_streams - {self.record})
        self.group, self.adds, self.releases, self.group_streams = [], Counter(), Counter(), set()
        self.group_blobs, self.group_bytes = {}, 0
        self._report()

    async def adopt_unnamed(self) -> None:
        """Add to the last batch each blob of the file that no event names (attached by
        an application to its own event types) and the target lacks, with the file's
        count: nothing else would ever take a reference to it. (These are held together,
        read again from the file, for that one batch.)"""
        if not self.group:
            return  # nothing new: an earlier import of these events took them
        for digest, refs in self.carried.items():
            if digest not in self.named and await self.log.get_blob(
                    self.tenant_id, digest) is None:
                payload = await self._payload(digest)
                if payload is not None:
                    self.group_blobs[digest] = payload
                    self.adds[digest] += refs

    async def withhold(self) -> int:
        """For a file exported without state: open the first batch with a `StateWithheld`
        record of the blobs the new events name that the target does not hold; how many.

        In the first batch, so that no event the import commits is ever without it. A
        blob the target's own events already name and it lacks is not recorded: that
        loss is the target's, and verify keeps reporting it.
        """
        if self.plan.header.get("with_state", True):
            return 0
        digests = []
        for digest in self.plan.withheld_candidates():
            if await self.log.get_blob(self.tenant_id, digest) is None:
                digests.append(digest.hex())
        if digests:
            self._append_record(digests)
        return len(digests)

    def _append_record(self, digests: list[str]) -> None:
        stream_id = self.record = f"{IMPORT_STREAM_PREFIX}{uuid7()}"
        recorded_at = read_clock(self.log.clock)
        prev_hash = GENESIS_HASH
        for version, start in enumerate(range(0, len(digests), _WITHHELD_PER_EVENT), 1):
            event = StateWithheld(digests=digests[start:start + _WITHHELD_PER_EVENT],
                                  exported_at=str(self.plan.header.get("exported_at", "")),
                                  source=str(self.plan.header.get("source", "")))
            tag, data = self.log.registry.encode(event)
            draft = StoredEvent(position=0, event_id=uuid7(), tenant_id=self.tenant_id,
                                stream_id=stream_id, version=version, recorded_at=recorded_at,
                                type=tag, data=data, prev_hash=prev_hash, hash=b"",
                                actor=self.log.acting)
            stored = msgspec.structs.replace(draft, hash=recompute_hash(draft))
            self.group.append(stored)
            prev_hash = stored.hash
        self.group_streams.add(stream_id)

    def _report(self) -> None:
        if self.progress is not None:
            self.progress("import", self.imported + self.present, self.plan.events)


# -- records ---------------------------------------------------------------------------------


def line_limit(max_payload_bytes: int) -> int:
    """The longest line an export of a log taking payloads of ``max_payload_bytes`` can
    hold: a blob (or an event) that large, base64-encoded, with its record around it."""
    return 4 * -(-max_payload_bytes // 3) + _LINE_SLACK


def _records(source: IO[bytes], limit: int) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, offset of the line, record) of each non-blank line; a line longer
    than ``limit`` is refused once ``limit`` bytes of it are read, never read whole."""
    number = 0
    while True:
        offset = source.tell()
        line = source.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            raise InvalidInput("file", f"line {number}: longer than {limit} bytes, the longest "
                                       "line an export holds (a blob or event at the largest "
                                       "payload, base64-encoded)")
        if not line.strip():
            continue
        yield number, offset, _record_of(line, number)


def _record_of(line: bytes, number: int) -> dict[str, Any]:
    try:
        record = msgspec.json.decode(line)
    except msgspec.DecodeError as error:
        raise InvalidInput("file", f"line {number}: not JSON ({error})") from None
    except UnicodeDecodeError:
        raise InvalidInput("file", f"line {number}: not UTF-8 text (an export is UTF-8 JSON "
                                   "Lines)") from None
    except RecursionError:  # an export's records nest a few levels, never hundreds
        raise InvalidInput("file", f"line {number}: nested deeper than any export "
                                   "record") from None
    if not isinstance(record, dict):
        raise InvalidInput("file", f"line {number}: not a JSON object")
    return record


class _Rereader:
    """Reads one record again from the file, by its offset, leaving the file where it was
    (the import's pass goes on reading from there)."""

    def __init__(self, source: IO[bytes], limit: int) -> None:
        self.source, self.limit = source, limit

    def record_at(self, offset: int) -> dict[str, Any]:
        """The record whose line starts at ``offset`` (checked by the first pass)."""
        resume = self.source.tell()
        try:
            self.source.seek(offset)
            return _record_of(self.source.readline(self.limit + 1), 0)
        finally:
            self.source.seek(resume)


def _event_of(record: dict[str, Any], number: int, tenant_id: str) -> StoredEvent:
    try:
        return StoredEvent(
            position=0,
            event_id=uuid.UUID(record["id"]),
            tenant_id=tenant_id,
            stream_id=check_id("stream", record["stream"]),
            version=_whole(record["version"]),
            recorded_at=_EPOCH + timedelta(microseconds=_whole(record["recorded_at"])),
            type=check_id("type", record["type"]),
            data=base64.b64decode(record["data"], validate=True),
            prev_hash=_digest(record["prev_hash"]),
            hash=_digest(record["hash"]),
            actor=_actor_of(record.get("actor"), number),
            signature=_signature_of(record.get("signature")),
        )
    except (KeyError, TypeError, ValueError, OverflowError, binascii.Error) as error:
        raise InvalidInput("file", f"line {number}: a malformed event ({error})") from None


def _actor_of(actor: Any, number: int) -> str | None:
    """An event record's actor: absent (None), or a principal `check_actor` accepts."""
    if actor is None:
        return None
    try:
        return check_actor(actor)
    except InvalidInput as error:
        raise InvalidInput("file", f"line {number}: a malformed event (its actor "
                                   f"{error.reason})") from None


def _signature_of(value: Any) -> bytes | None:
    """An event record's signature: absent (None), or the stored bytes as hex."""
    if value is None:
        return None
    signature = bytes.fromhex(value)
    if len(signature) != SIGNATURE_SIZE:
        raise ValueError(f"its signature is {len(signature)} bytes, not {SIGNATURE_SIZE}")
    return signature


def _blob_of(record: dict[str, Any], number: int) -> tuple[bytes, bytes, int]:
    try:
        digest = _digest(record["digest"])
        payload = base64.b64decode(record["data"], validate=True)
        refs = _whole(record["refs"])
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise InvalidInput("file", f"line {number}: a malformed blob ({error})") from None
    # A blob the digest tells is never counted, so its stored count (what an export
    # writes) may be 0 (`eventlog.hashing.TOLD_BY_DIGEST`).
    if refs < (0 if uncounted(payload) else 1) or content_digest(payload) != digest:
        raise InvalidInput("file", f"line {number}: blob {digest.hex()[:12]}… does not match "
                                   "its digest or has no references")
    return digest, payload, refs


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not a whole number")
    return value


def _digest(value: Any) -> bytes:
    digest = bytes.fromhex(value)
    if len(digest) != 32:
        raise ValueError(f"{value!r} is not a SHA-256 digest")
    return digest

