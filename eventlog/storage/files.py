"""The file-system store (``file:///dir``): JSON files, one process at a time.

Layout of ``dir``::

    manifest.json         format name and version; an unknown version is refused
    lock                  held with an exclusive flock while the store is open
    events.jsonl          the log: one JSON line per append (all its events), fsynced
    heads.json            the index: each stream's head as of the last clean close
    consumers.json        durable consumers' positions and leases (rewritten atomically)
    blobs/<tenant>/<sha>  content-addressed payloads (tenant directory = sha256 of its id)
    keys.json             the subject keys of an encrypted log, wrapped, and the keyrings
                          they are wrapped under (written atomically)

Crash safety: blobs are written (temp file, fsync, rename) before the log line that
references them, and a released blob is deleted only after the line that released it is
durable, so a crash leaves at worst an orphan blob, which the next open removes. A line
cut short by a crash is the one append that did not happen: opening truncates it away.
The views live in memory and are rebuilt from the log when the store opens.

Why an index: views rebuilt from the log alone cannot notice that the log lost its end (a
stream's tail or a whole stream cut out of events.jsonl); the remaining prefix still
chains. So the stream heads are also written to heads.json when the store closes, and on
open a stream the log holds fewer events of than the index recorded keeps the index's
head row, which `verify` then reports as truncated. After a crash the index is only
behind the log, never ahead, so it raises no false alarm.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import msgspec

from eventlog.errors import SchemaError, StorageError, StoreLocked, UnknownSchemaRevision
from eventlog.hashing import to_micros
from eventlog.records import StoredEvent
from eventlog.storage.base import AppendRequest, PendingEvent
from eventlog.storage.contracts import ConsumerRow, ViewsRebuiltOnOpen
from eventlog.storage.contracts.keys import PLAIN, KeyringRow
from eventlog.storage.memkeys import (
    keyrings_from_json,
    keyrings_to_json,
    rows_from_json,
    rows_to_json,
)
from eventlog.storage.memory import MemoryBackend
from eventlog.telemetry import Database
from projections.changes import Upsert
from projections.memory import ViewTables
from projections.views import STREAM_HEADS

FORMAT = "checkpoint-eventlog/file"
FORMAT_VERSION = 2
"""Version 2 (migration 0032's counterpart): thread puts may be stored compact, which the
code that wrote version 1 would misread; it refuses a version it does not know. A version
1 store is stamped 2 when it is opened (its lines read the same)."""
_HEADS = STREAM_HEADS
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FileBackend(MemoryBackend, ViewsRebuiltOnOpen):
    """The log as JSON Lines in a directory, held open by one process."""

    name = "file"

    @property
    def database(self) -> Database:
        """The store's directory, as given."""
        return Database(system="eventlog.file", namespace=str(self.root))

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self._lock: IO[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._indexed_heads: list[dict[str, Any]] = []

    async def open(self, *, upgrade: bool) -> str:
        """Open the store; with ``upgrade=False`` (forensic reads) nothing on disk changes
        and appends are refused."""
        if upgrade:
            self.root.mkdir(parents=True, exist_ok=True)
        elif not (self.root / "manifest.json").exists():
            raise SchemaError(f"no file store at {str(self.root)!r}: open it with "
                              "upgrade=True to create it")
        self._take_lock()
        try:
            self._check_manifest(create=upgrade)
            torn = self._load()
            self._indexed_heads = self._read_index()
            recorded = self._load_keys()
            self.consumer_rows = self._read_consumers()
            if upgrade:
                self._record_keyrings(recorded)
                self._repair(torn)
                self._log = open(self.root / "events.jsonl", "ab")  # noqa: SIM115 - held open
                fsync_directory(self.root)  # the log file's own directory entry is durable too
        except BaseException:
            self._release_lock()
            raise
        return f"file-v{FORMAT_VERSION}"

    def _repair(self, torn: int | None) -> None:
        """After a crash: cut the torn last line and remove orphan blobs, unless the index
        proves events were acknowledged that the log no longer holds (then the damage is
        evidence, and a torn line must not be cut nor a new line written after it)."""
        indexed = max((row["last_position"] for row in self._indexed_heads), default=0)
        if indexed > len(self.events):
            if torn is not None:
                raise StorageError(
                    "file", "open", "events.jsonl ends in a damaged line although heads.json "
                    f"records {indexed} events and {len(self.events)} are readable; open it "
                    "with upgrade=False (the eventlog command's reading commands do) to "
                    "inspect it without changing anything")
            return
        if torn is not None:
            with open(self.root / "events.jsonl", "r+b") as handle:
                handle.truncate(torn)
                os.fsync(handle.fileno())
        self._remove_orphan_blobs()

    async def close(self) -> None:
        try:
            if self._log is not None:
                self._log.close()
                self._log = None
                self._write_index()
        except OSError as error:
            # heads.json stays as it was: behind the log, which is what a crash leaves and
            # raises no false alarm. The lock is released all the same.
            raise StorageError("file", "close", f"heads.json not written: {error}") from error
        finally:
            self._release_lock()

    def _load_keys(self) -> bool:
        """Load keys.json; whether it records the keyrings (a store written before they
        were recorded does not)."""
        path = self.root / "keys.json"
        if not path.exists():
            return False
        try:
            stored = json.loads(path.read_bytes())
            self.subject_key_rows = rows_from_json(stored["keys"])
            self.keyring_rows = keyrings_from_json(stored.get("keyrings", []))
        except (ValueError, KeyError, TypeError) as error:
            raise StorageError("file", "open", f"keys.json: {error}") from None
        return "keyrings" in stored

    def _record_keyrings(self, recorded: bool) -> None:
        """What migration 0020 does to a SQL log, once: a store written before keyrings
        were recorded that holds events but no key was written without a keyring."""
        if recorded:
            return
        if self.events and not self._key_rows():
            self._keyring_rows()[PLAIN] = KeyringRow(PLAIN, b"", datetime.now(UTC))
        _write_atomically(self.root / "keys.json", json.dumps({
            "keys": rows_to_json(self._key_rows()),
            "keyrings": keyrings_to_json(self._keyring_rows())}))

    def keys_changed(self) -> None:
        # Written at once (temp file, fsync, rename): an erasure is durable when it returns.
        if self._log is None:
            raise StorageError("file", "keys", "the file store is open read-only")
        _write_atomically(self.root / "keys.json", json.dumps({
            "keys": rows_to_json(self._key_rows()),
            "keyrings": keyrings_to_json(self._keyring_rows())}))

    def stored_events(self) -> Iterable[StoredEvent]:
        return list(self.events)

    def install_views(self, tables: ViewTables) -> None:
        for row in self._indexed_heads:
            stream = self.streams.get((row["tenant_id"], row["stream_id"]))
            if not stream or stream[-1].version < row["version"]:
                tables.apply(Upsert(_HEADS, row), row["last_position"])
        self.views = tables

    async def append(self, request: AppendRequest) -> list[int]:
        return (await self.append_batch([request]))[0]

    async def append_batch(self, requests: Sequence[AppendRequest]) -> list[list[int]]:
        # A batch is ONE line: a crash that tears it loses the whole batch, never a part.
        if self._log is None:
            reason = "opened read-only (upgrade=False)" if self._lock else "closed"
            raise StorageError("file", "append", f"the store is {reason}")
        for request in requests:
            self.check(request)
        written: list[Path] = []  # blob files this append created, removed if it fails
        try:
            for request in requests:
                for digest, (payload, _count) in request.blob_adds.items():
                    if self._write_blob(request.tenant_id, digest, payload):
                        written.append(self._blob_path(request.tenant_id, digest))
        except OSError as error:  # a full disk, an I/O error: the append never happened
            _remove(written)
            raise StorageError("file", "append", str(error)) from error
        offset = self._log.tell()
        try:
            self._log.write(_encode_line(requests))
            self._log.flush()
            os.fsync(self._log.fileno())
        except OSError as error:
            self._cut_back(offset)
            _remove(written)
            raise StorageError("file", "append", str(error)) from error
        positions = self.commit_batch(requests)
        for request in requests:
            for digest in request.blob_releases:
                if (request.tenant_id, digest) not in self.refs:
                    with contextlib.suppress(FileNotFoundError):
                        self._blob_path(request.tenant_id, digest).unlink()
        return positions

    def _cut_back(self, offset: int) -> None:
        """Remove whatever a failed write left after ``offset``: an append reported as
        failed must not reappear when the store is next opened."""
        path = self.root / "events.jsonl"
        with contextlib.suppress(OSError):
            assert self._log is not None
            self._log.close()  # its buffer may still hold the line; truncating drops it
        with contextlib.suppress(OSError), open(path, "r+b") as handle:
            handle.truncate(offset)
            os.fsync(handle.fileno())
        self._log = open(path, "ab")  # noqa: SIM115 - held open

    # -- opening -------------------------------------------------------------------------

    def _take_lock(self) -> None:
        handle = open(self.root / "lock", "a+b")  # noqa: SIM115 - held until close
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StoreLocked(str(self.root)) from None
        self._lock = handle

    def _release_lock(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _check_manifest(self, *, create: bool) -> None:
        path = self.root / "manifest.json"
        if not path.exists() and create:
            _write_atomically(path, json.dumps({"format": FORMAT, "version": FORMAT_VERSION}))
            return
        try:
            manifest = json.loads(path.read_bytes())
        except (OSError, ValueError) as error:
            raise StorageError("file", "open", f"manifest.json is unreadable ({error}); "
                               "this is not an intact file store") from None
        if not isinstance(manifest, dict):
            raise StorageError("file", "open", "manifest.json is not a JSON object")
        version = manifest.get("version")
        if manifest.get("format") != FORMAT or type(version) is not int or version not in (
                1, FORMAT_VERSION):
            found = f"{manifest.get('format')}@{manifest.get('version')}"
            raise UnknownSchemaRevision(found, f"{FORMAT}@{FORMAT_VERSION}")
        if version != FORMAT_VERSION and create:
            # Opened to write (a forensic read changes nothing): stamped before anything is
            # appended, so the older code refuses the store from the first compact put on
            # (the lock is held: no other process writes it).
            _write_atomically(path, json.dumps({**manifest, "version": FORMAT_VERSION}))

    def _load(self) -> int | None:
        """Read the log into memory; the offset a torn last line starts at, if there is one
        (an append cut short by a crash: it never happened)."""
        path = self.root / "events.jsonl"
        if not path.exists():
            return None
        raw = path.read_bytes()
        good = raw.rfind(b"\n") + 1
        for number, line in enumerate(raw[:good].splitlines(), start=1):
            try:
                for request in _decode_line(line):
                    self.store(request)
            except (ValueError, KeyError) as error:
                raise StorageError("file", "open", f"events.jsonl line {number}: {error}") from None
        return good if good < len(raw) else None

    def _read_index(self) -> list[dict[str, Any]]:
        path = self.root / "heads.json"
        if not path.exists():
            return []
        try:
            return [
                {"tenant_id": tenant, "stream_id": stream, "version": version,
                 "head_hash": bytes.fromhex(head), "last_position": position,
                 "updated_at": _EPOCH + timedelta(microseconds=micros)}
                for tenant, stream, version, head, position, micros in json.loads(
                    path.read_bytes()
                )["heads"]
            ]
        except (ValueError, KeyError, TypeError) as error:
            raise StorageError("file", "open", f"heads.json: {error}") from None

    def _write_index(self) -> None:
        heads = [
            [row["tenant_id"], row["stream_id"], row["version"], row["head_hash"].hex(),
             row["last_position"], to_micros(row["updated_at"])]
            for row in self.views.snapshot().get(_HEADS, [])
        ]
        _write_atomically(self.root / "heads.json", json.dumps({"heads": heads}))

    def consumers_changed(self) -> None:
        if self._log is None:
            raise StorageError("file", "consumer", "the store is opened read-only "
                               "(upgrade=False) or closed")
        rows = [msgspec.to_builtins(row) for row in self.consumer_rows.values()]
        _write_atomically(self.root / "consumers.json", json.dumps({"consumers": rows}))

    def _read_consumers(self) -> dict[str, ConsumerRow]:
        path = self.root / "consumers.json"
        if not path.exists():
            return {}
        try:
            rows = msgspec.convert(json.loads(path.read_bytes())["consumers"],
                                   list[ConsumerRow], strict=False)
        except (ValueError, KeyError, TypeError, msgspec.ValidationError) as error:
            raise StorageError("file", "open", f"consumers.json: {error}") from None
        return {row.name: row for row in rows}

    def _remove_orphan_blobs(self) -> None:
        blobs = self.root / "blobs"
        if not blobs.exists():
            return
        live = {(_tenant_dir(tenant), digest.hex()) for tenant, digest in self.refs}
        for path in blobs.glob("*/*"):
            if (path.parent.name, path.name) not in live:
                path.unlink()

    # -- blobs ---------------------------------------------------------------------------

    async def get_blob(self, tenant_id: str, digest: bytes) -> bytes | None:
        if (tenant_id, digest) not in self.refs:
            return None
        try:
            return self._blob_path(tenant_id, digest).read_bytes()
        except FileNotFoundError:
            return None

    async def blob_sizes(self, tenant_id: str, digests: Sequence[bytes]) -> dict[bytes, int]:
        sizes: dict[bytes, int] = {}
        for digest in dict.fromkeys(digests):
            if (tenant_id, digest) not in self.refs:
                continue
            try:
                sizes[digest] = self._blob_path(tenant_id, digest).stat().st_size
            except FileNotFoundError:
                continue
        return sizes

    def _write_blob(self, tenant_id: str, digest: bytes, payload: bytes) -> bool:
        """Store a payload unless its file exists; whether this call created it."""
        path = self._blob_path(tenant_id, digest)
        if path.exists():
            return False
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            fsync_directory(path.parent.parent)
        _write_atomically(path, payload)
        return True

    def _blob_path(self, tenant_id: str, digest: bytes) -> Path:
        return self.root / "blobs" / _tenant_dir(tenant_id) / digest.hex()

    def _apply_blobs(self, request: AppendRequest) -> None:
        self._count_refs(request)  # counts only: payloads stay on disk, not in memory


def _tenant_dir(tenant_id: str) -> str:
    return hashlib.sha256(tenant_id.encode()).hexdigest()


def _write_atomically(path: Path, payload: bytes | str) -> None:
    data = payload.encode() if isinstance(payload, str) else payload
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        _remove([temporary])  # a full disk must not keep what it could not finish
        raise
    fsync_directory(path.parent)


def _remove(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` survive a power loss, not only the
    bytes already fsynced inside it."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _encode_line(requests: Sequence[AppendRequest]) -> bytes:
    """One append as one line; a batch of several as one line ``{"batch": [...]}``."""
    records = [_encode_request(request) for request in requests]
    line = records[0] if len(records) == 1 else {"batch": records}
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def _encode_request(request: AppendRequest) -> dict[str, Any]:
    return {
        "tenant": request.tenant_id,
        "stream": request.stream_id,
        "events": [
            {
                "id": str(event.event_id),
                "version": event.version,
                "at": to_micros(event.recorded_at),
                "type": event.type,
                "data": base64.b64encode(event.data).decode(),
                "prev": event.prev_hash.hex(),
                "hash": event.hash.hex(),
                # Only when given: a line without an actor is as it was before actors.
                **({} if event.actor is None else {"actor": event.actor}),
                **({} if event.signature is None else {"sig": event.signature.hex()}),
            }
            for event in request.events
        ],
        "adds": {digest.hex(): count for digest, (_, count) in request.blob_adds.items()},
        "releases": {digest.hex(): count for digest, count in request.blob_releases.items()},
    }


def _decode_line(line: bytes) -> list[AppendRequest]:
    record: dict[str, Any] = json.loads(line)
    if "batch" in record:
        return [_decode_request(part) for part in record["batch"]]
    return [_decode_request(record)]


def _decode_request(record: dict[str, Any]) -> AppendRequest:
    return AppendRequest(
        tenant_id=record["tenant"],
        stream_id=record["stream"],
        events=[
            PendingEvent(
                event_id=uuid.UUID(event["id"]),
                version=event["version"],
                recorded_at=_EPOCH + timedelta(microseconds=event["at"]),
                type=event["type"],
                data=base64.b64decode(event["data"]),
                prev_hash=bytes.fromhex(event["prev"]),
                hash=bytes.fromhex(event["hash"]),
                actor=event.get("actor"),
                signature=None if event.get("sig") is None else bytes.fromhex(event["sig"]),
            )
            for event in record["events"]
        ],
        changes=[],
        blob_adds={bytes.fromhex(d): (b"", n) for d, n in record["adds"].items()},
        blob_releases={bytes.fromhex(d): n for d, n in record["releases"].items()},
    )
