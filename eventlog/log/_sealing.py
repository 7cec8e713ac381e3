"""Encryption inside the log's append and read paths (issue 32): stores hand plain values
to the log, storage sees only ciphertext and keyed addresses.

The seam is narrow: an append's attached blobs and its events' encoded bytes pass through
`Sealer.seal_append` before they are chained; the read side opens blobs
(`Sealer.open_blob`), event bytes (`Sealer.open_event`) and view rows
(`Sealer.open_rows`). Nothing else of the log changes, so ids, versions, times, types,
digests and the chain stay in the clear and `verify`, the tree's proofs and every
forensic listing work without the keyring.

- **State payloads** are sealed with a nonce derived from the plaintext (one state sealed
  twice in one stream is one blob) and addressed by the SHA-256 of the envelope: a keyed
  address, so no plaintext digest is stored. The events the stores made name the plain
  digest; the sealer rewrites each of those names (a 64-hex string, wherever it occurs in
  the event's bytes) to the sealed address before the event is chained, so the views,
  releases and verify's counts all speak of sealed addresses.
- **Free-text fields** are those the event's type declares sealed (annotated
  `eventlog.events.SEALED`; the log is handed their paths, `EventRegistry.sealed_fields`,
  and knows no type's fields itself). Each is sealed and replaced by a marker of the
  field's JSON shape (``{"$sealed": …}``, or ``"$sealed:…"`` for a string): the event still
  decodes as its type, and the views folding it hold the marker.
- **Reading.** A marker opens to the plain value; a field of an erased subject reads as
  ``{"$erased": true}`` (``"$erased"`` for a string), so records still list; a state blob of
  an erased subject raises `SubjectErased`. Plaintext where a sealed value belongs, or an
  envelope of another stream or field, raises `SealRefused`.

A subject's key is made on its first sealed write (a row of `KeyStorage`, wrapped by the
keyring) and cached by this process; `erase` destroys every generation and forgets it.
A cached key is used for at most ``cache_seconds`` (`open_log(key_cache_seconds=...)`)
before its row is read again: if another process erased the subject meanwhile, the key is
dropped and the read or write refused (`SubjectErased`). An unchanged row is not unwrapped
again (a KMS is not called once per interval), so the check costs one small read per
subject per interval.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

import msgspec

from eventlog._logging import get_logger
from eventlog.crypto._keyring import KeyProvider
from eventlog.crypto._seal import MAGIC, DataKey, Header, parse
from eventlog.errors import KeyringRequired, KeyUnavailable, SealRefused, SubjectErased
from eventlog.events import Path
from eventlog.hashing import content_digest
from eventlog.log._erasures import ErasureLedger
from eventlog.storage.contracts.events import EventStorage
from eventlog.storage.contracts.keys import KeyRow, KeyStorage
from eventlog.validation import DEFAULT_KEY_CACHE_SECONDS

logger = get_logger(__name__)

SEALED = "$sealed"
_SEALED_TEXT = "$sealed:"
ERASED: dict[str, Any] = {"$erased": True}
"""What an erased subject's sealed field (not a string) reads as."""
ERASED_TEXT = "$erased"
"""What an erased subject's sealed string field reads as."""
STATE = "state"
"""The kind of a sealed state payload."""
PLAINTEXT_HINT = (" (data written before the log had a keyring is not read with one: an "
                  "encrypted log holds sealed data only, so read this data without keyring=, "
                  "and keep encrypted data in a log that had its keyring from the start)")
"""Said with each refusal of plaintext: the usual cause is a keyring added to a plain log."""

_MARKER_TEXT = b'"$sealed'
_ADDRESSES = 16384
"""Sealed addresses a process remembers by plain digest (`Sealer.addresses`)."""


Owner = tuple[str, str, str | None]
"""Whose a view row's sealed values must be: (stream, record, subject or None)."""


class RowBinding(Protocol):
    """How a view table's rows say whose their sealed values are
    (`projections.views.SealedRow`)."""

    def expected(self, row: Mapping[str, Any]) -> Owner | None: ...


def _kind(tag: str, path: tuple[str, ...]) -> str:
    return f"{tag}:{'.'.join(path)}"


def subject_of(stream_id: str) -> str:
    """The default subject of a stream: its session's or thread's id, else the stream."""
    for prefix in ("session:", "thread:"):
        if stream_id.startswith(prefix):
            return stream_id[len(prefix):]
    return stream_id


class Sealer:
    """Seals what an append stores and opens what a read returns, under subject keys."""

    def __init__(self, storage: Any, provider: KeyProvider, *,
                 cache_seconds: float = DEFAULT_KEY_CACHE_SECONDS,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.keys: KeyStorage = storage
        self.events: EventStorage = storage
        self.provider = provider
        self.cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._current: dict[tuple[str, str], tuple[int, DataKey]] = {}
        self._opened: dict[tuple[str, str, int], DataKey] = {}
        self._checked: dict[tuple[str, str], tuple[float, tuple[KeyRow, ...]]] = {}
        """When each cached subject's key rows were last read, and the rows read then."""
        self._batches: dict[tuple[str, str], str] = {}
        self._addresses: OrderedDict[tuple[str, Header, bytes], bytes] = OrderedDict()
        self.erasures: ErasureLedger | None = None
        """What the log says of each subject's erasure (set by the log): the key rows
        obey it (`_rows`)."""
        self._refused: set[tuple[str, str, int]] = set()
        """Key rows already logged as refused (restored after their erasure)."""

    # -- keys ----------------------------------------------------------------------------

    async def current_key(self, tenant: str, subject: str, *, now: datetime,
                          reopen: bool = False) -> tuple[int, DataKey]:
        """The subject's key to seal with, made on first use; `SubjectErased` when its
        newest key was destroyed (unless ``reopen``: then a new generation is made)."""
        cached = self._current.get((tenant, subject))
        if cached is not None and await self._still_held(tenant, subject):
            return cached
        for _ in range(8):
            rows, through = await self._rows(tenant, subject)
            self._seen(tenant, subject, rows)
            if rows and rows[-1].wrapped is not None:
                key = self._unwrap(rows[-1])
                self._current[(tenant, subject)] = (rows[-1].generation, key)
                return rows[-1].generation, key
            if (rows or through) and not reopen:
                raise SubjectErased(tenant, subject)
            # A reopening is a generation above every one the log erased, even when
            # their rows are gone: a generation the log erased is never made again.
            generation = max(rows[-1].generation if rows else 0, through) + 1
            key = DataKey.new()
            wrapped = self.provider.wrap(key.raw, context_of(tenant, subject, generation))
            made = KeyRow(tenant, subject, generation, self.provider.key_id, wrapped, now)
            if await self.keys.add_subject_key(made):
                self._seen(tenant, subject, [*rows, made])
                self._current[(tenant, subject)] = (generation, key)
                self._opened[(tenant, subject, generation)] = key
                return generation, key
        raise KeyUnavailable(tenant, subject, f"subject {subject!r}: no key could be made")

    async def _key(self, tenant: str, header: Header) -> DataKey:
        found = self._opened.get((tenant, header.subject, header.generation))
        if found is not None and await self._still_held(tenant, header.subject):
            found = self._opened.get((tenant, header.subject, header.generation))
            if found is not None:
                return found
        rows, through = await self._rows(tenant, header.subject)
        self._seen(tenant, header.subject, rows)
        if header.generation <= through:
            raise SubjectErased(tenant, header.subject)
        row = next((row for row in rows if row.generation == header.generation), None)
        if row is None:
            raise KeyUnavailable(tenant, header.subject, (
                f"no data key of subject {header.subject!r} (generation {header.generation}) "
                f"is stored in tenant {tenant!r}: the log was copied without its keys"))
        if row.wrapped is None:
            raise SubjectErased(tenant, header.subject)
        key = self._unwrap(row)
        self._opened[(tenant, header.subject, header.generation)] = key
        return key

    def _unwrap(self, row: KeyRow) -> DataKey:
        assert row.wrapped is not None
        try:
            raw = self.provider.unwrap(row.wrapped, context_of(row.tenant_id, row.subject,
                                                             row.generation))
        except Exception as error:
            raise KeyUnavailable(row.tenant_id, row.subject, (
                f"the keyring {self.provider.key_id!r} cannot unwrap the data key of subject "
                f"{row.subject!r} (wrapped under {row.kek_id!r}): another keyring?")) from error
        return DataKey(raw)

    async def _still_held(self, tenant: str, subject: str) -> bool:
        """Whether the subject's cached keys may still be used: yes within
        ``cache_seconds`` of reading its rows; after that the rows are read again, and if
        they changed (an erasure, a new generation made elsewhere) the cached keys
        are dropped and False returned, so the caller reads and unwraps afresh."""
        checked = self._checked.get((tenant, subject))
        now = self._monotonic()
        if checked is not None and now - checked[0] < self.cache_seconds:
            return True
        rows = tuple((await self._rows(tenant, subject))[0])
        if checked is not None and _same_keys(checked[1], rows):
            self._checked[(tenant, subject)] = (now, rows)
            return True
        self.forget(tenant, subject)
        return False

    async def _rows(self, tenant: str, subject: str) -> tuple[list[KeyRow], int]:
        """The subject's key rows as its log has them, and the highest generation the log
        erased (0: none): a row of an erased generation that still holds a key (written
        back from a backup, or imported) reads as erased, and is logged as refused."""
        rows = await self.keys.subject_keys(tenant, subject)
        if self.erasures is None:
            return rows, 0
        erasure = await self.erasures.erasure(tenant, subject)
        through = erasure.through
        if not through or all(row.wrapped is None for row in rows
                              if row.generation <= through):
            return rows, through
        obeyed = []
        for row in rows:
            if row.generation <= through and row.wrapped is not None:
                if (tenant, subject, row.generation) not in self._refused:
                    self._refused.add((tenant, subject, row.generation))
                    logger.warning("erased_key_refused", tenant=tenant, subject=subject,
                                   generation=row.generation, erasure_version=erasure.version)
                row = replace(row, wrapped=None, erased_at=row.erased_at or erasure.at)
            obeyed.append(row)
        return obeyed, through

    def _seen(self, tenant: str, subject: str, rows: Sequence[KeyRow]) -> None:
        self._checked[(tenant, subject)] = (self._monotonic(), tuple(rows))

    def forget(self, tenant: str, subject: str) -> None:
        """Drop the subject's cached keys (after an erasure)."""
        self._checked.pop((tenant, subject), None)
        self._current.pop((tenant, subject), None)
        for key in [key for key in self._opened if key[:2] == (tenant, subject)]:
            del self._opened[key]
        for held in [held for held in self._addresses
                     if held[0] == tenant and held[1].subject == subject]:
            del self._addresses[held]

    # -- the write side ------------------------------------------------------------------

    async def subject_for(self, tenant: str, stream: str, events: Iterable[Any]) -> str:
        """An interrupt batch's subject is its thread (the session); else `subject_of`."""
        if not stream.startswith("interrupt-batch:"):
            return subject_of(stream)
        for event in events:
            thread = getattr(event, "thread_id", None)
            if isinstance(thread, str) and hasattr(event, "interrupts"):
                self._batches[(tenant, stream)] = thread
                return thread
        known = self._batches.get((tenant, stream))
        if known is None:
            first = await self.events.read_stream(tenant, stream, 1, 1)
            known = stream
            if first:
                thread = msgspec.json.decode(first[0].data).get("thread_id")
                known = thread if isinstance(thread, str) else stream
            self._batches[(tenant, stream)] = known
        return known

    def seal_blobs(self, tenant: str, header: Header, key: DataKey, attach: Sequence[bytes]
                   ) -> tuple[list[bytes], dict[bytes, bytes]]:
        """The sealed payloads, and each plain digest's hex mapped to its sealed address's."""
        sealed, renames = [], {}
        for payload in attach:
            envelope = key.seal(tenant, header, payload, derived=True)
            sealed.append(envelope)
            renames[content_digest(payload).hex().encode()] = (
                content_digest(envelope).hex().encode())
        return sealed, renames

    async def addresses(self, tenant: str, stream: str, *, now: datetime,
                        subject: str | None = None) -> Callable[[bytes], bytes]:
        """The address a payload attached to an append to ``stream`` is stored under: the
        SHA-256 of its envelope, sealed as `seal_blobs` seals it (under the stream's
        subject's current key; `SubjectErased` if that subject was erased). What element
        storage names its elements and manifests by inside a manifest, which is sealed
        whole, so the renaming of digests in event bytes never reaches them. Remembered
        by plain digest (`_ADDRESSES` of them), so a list's unchanged items are not
        sealed again at every put. ``subject`` is the one the append seals under (a
        `sealing_for` block's), the stream's own by default."""
        subject = subject or subject_of(stream)
        generation, key = await self.current_key(tenant, subject, now=now)
        header = Header(subject, generation, stream, STATE)
        held = self._addresses

        def address(payload: bytes) -> bytes:
            name = (tenant, header, content_digest(payload))
            found = held.get(name)
            if found is None:
                found = content_digest(key.seal(tenant, header, payload, derived=True))
                held[name] = found
                if len(held) > _ADDRESSES:
                    held.popitem(last=False)
            return found

        return address

    async def source_renames(self, tenant: str, stream: str, attach: Sequence[bytes],
                             sealed: Sequence[bytes], *, now: datetime,
                             subject: str | None = None) -> dict[bytes, bytes]:
        """Each payload's address as ``stream`` (a copy's source) sealed it, under
        ``subject`` (the stream's own by default), mapped to its address as sealed now
        (``sealed``, in the same order)."""
        subject = subject or subject_of(stream)
        generation, key = await self.current_key(tenant, subject, now=now)
        header = Header(subject, generation, stream, STATE)
        return {content_digest(key.seal(tenant, header, payload, derived=True)).hex().encode():
                content_digest(envelope).hex().encode()
                for payload, envelope in zip(attach, sealed, strict=True)}

    def seal_event(self, tenant: str, header: Header, key: DataKey, tag: str, data: bytes,
                   renames: dict[bytes, bytes], paths: Sequence[Path], *,
                   record: str = "") -> bytes:
        """The event's bytes with every renamed digest and every sealed field (its type's
        ``paths``) sealed, each bound to ``record`` (`Event.sealed_record`) when given."""
        for plain, sealed in renames.items():
            if plain in data:
                data = data.replace(plain, sealed)
        if not paths:
            return data
        body = msgspec.json.decode(data)
        for path in paths:
            field = header._replace(kind=_kind(tag, path), record=record)
            _walk(body, path, lambda value, field=field: _seal_value(tenant, field, key, value))
        return msgspec.json.encode(body)

    # -- the read side -------------------------------------------------------------------

    async def open_blob(self, tenant: str, payload: bytes) -> bytes:
        """A state blob's plaintext (`SubjectErased`, `SealRefused`, `KeyUnavailable`)."""
        parsed = parse(payload)
        if parsed is None or parsed[0].kind != STATE:
            raise SealRefused(tenant, "", f"a state blob of tenant {tenant!r} is not sealed "
                                          "although the log is encrypted: refused, never read"
                                          + PLAINTEXT_HINT)
        header, start = parsed
        return self._open(tenant, await self._key(tenant, header), header, payload, start)

    async def open_event(self, tenant: str, stream: str, tag: str, data: bytes,
                         paths: Sequence[Path]) -> bytes:
        """The event's bytes with its sealed fields (its type's ``paths``) opened (or
        marked erased)."""
        if not paths:
            return data
        body = msgspec.json.decode(data)
        for path in paths:
            expected = (stream, _kind(tag, path))
            found: list[Any] = []
            _walk(body, path, _collect(found))
            opened = [await self._open_value(tenant, value, expected) for value in found]
            _walk(body, path, _replay(opened))
        return msgspec.json.encode(body)

    async def open_rows(self, tenant: str | None, rows: list[dict[str, Any]],
                        columns: Mapping[str, Sequence[Path]],
                        related: Sequence[tuple[str, Mapping[str, Sequence[Path]],
                                                RowBinding | None]] = (),
                        binding: RowBinding | None = None) -> list[dict[str, Any]]:
        """View rows with the sealed markers of their sealed ``columns`` (column → the
        paths in its JSON that hold sealed values, as the view's projection declares
        them) opened in place; ``related`` names each list of related rows a row
        carries, with its table's sealed columns and binding. Plaintext where a sealed
        value belongs is refused (`SealRefused`), and so is a value whose envelope names
        another stream, record or subject than the row's ``binding`` (the table's, as
        its projection declares it: `projections.views.SealedRow`) gives: copied from
        another row behind the log's back."""
        for row in rows:
            await self._open_row(tenant, row, columns, binding)
            for name, nested, nested_binding in related:
                for item in row.get(name) or ():
                    await self._open_row(tenant, item, nested, nested_binding)
        return rows

    async def _open_row(self, tenant: str | None, row: dict[str, Any],
                        columns: Mapping[str, Sequence[Path]],
                        binding: RowBinding | None) -> None:
        for column, paths in columns.items():
            value = row.get(column)
            raw = value.encode() if isinstance(value, str) else value
            if not isinstance(raw, bytes):
                continue
            _refuse_plain_view(tenant, column, raw, paths)
            if _MARKER_TEXT in raw:
                owner = None if binding is None else binding.expected(row)
                opened = await self._open_tree(row.get("tenant_id", tenant),
                                               msgspec.json.decode(raw), owner)
                encoded = msgspec.json.encode(opened)
                row[column] = encoded.decode() if isinstance(value, str) else encoded

    async def open_field(self, tenant: str, value: Any, stream: str, kind: str) -> Any:
        """One sealed field's value as found in ``stream``'s field ``kind`` (``tag:path``):
        opened, or marked erased (`ERASED`, `ERASED_TEXT`); `SealRefused` if it is not
        sealed, or was sealed elsewhere."""
        return await self._open_value(tenant, value, (stream, kind))

    async def _open_tree(self, tenant: Any, value: Any, owner: Owner | None) -> Any:
        if _is_marker(value):
            return await self._open_value(tenant, value, None, owner)
        if isinstance(value, dict):
            return {name: await self._open_tree(tenant, item, owner)
                    for name, item in value.items()}
        if isinstance(value, list):
            return [await self._open_tree(tenant, item, owner) for item in value]
        return value

    async def _open_value(self, tenant: str, value: Any, expected: tuple[str, str] | None,
                          owner: Owner | None = None) -> Any:
        if value is None or value == {} or value == []:
            return value
        text = isinstance(value, str)
        if not _is_marker(value):
            raise SealRefused(tenant, "", "a free-text field holds plaintext although the "
                                          "log is encrypted: refused, never read"
                                          + PLAINTEXT_HINT)
        envelope = base64.b64decode(value[len(_SEALED_TEXT):] if text else value[SEALED])
        parsed = parse(envelope)
        if parsed is None:
            raise SealRefused(tenant, "", "a sealed field is damaged")
        header, start = parsed
        if expected is not None and (header.stream, header.kind) != expected:
            raise SealRefused(tenant, header.subject, (
                f"a sealed field of {header.stream!r} ({header.kind}) was found in "
                f"{expected[0]!r} ({expected[1]}): moved, refused"))
        if owner is not None:
            _refuse_copied(tenant, header, owner)
        try:
            key = await self._key(tenant, header)
        except SubjectErased:
            return ERASED_TEXT if text else dict(ERASED)
        return msgspec.json.decode(self._open(tenant, key, header, envelope, start))

    def _open(self, tenant: str, key: DataKey, header: Header, envelope: bytes,
              start: int) -> bytes:
        from cryptography.exceptions import InvalidTag

        try:
            return key.open(tenant, envelope, start)
        except InvalidTag:
            raise SealRefused(tenant, header.subject, (
                f"sealed data of subject {header.subject!r} does not open in tenant "
                f"{tenant!r}: changed, or moved from another tenant; refused")) from None


def _refuse_copied(tenant: str, header: Header, owner: Owner) -> None:
    """`SealRefused` unless the envelope ``header`` is the view row's own: sealed in its
    stream, for its record (an envelope of the first form names none: its stream and
    subject are checked) and, where the row names one, for its subject."""
    stream, record, subject = owner
    if (header.stream == stream and (not header.record or header.record == record)
            and (subject is None or header.subject == subject)):
        return
    raise SealRefused(tenant, header.subject, (
        f"a sealed value of {header.stream!r} (record {header.record or 'unnamed'}, subject "
        f"{header.subject!r}) was found in a view row of {stream!r} (record {record}"
        + ("" if subject is None else f", subject {subject!r}")
        + "): copied from another row, refused"))


def _same_keys(before: Sequence[KeyRow], now: Sequence[KeyRow]) -> bool:
    """The same key generations, none destroyed since (a rotation re-wraps a row but
    leaves its data key, so the cached key stays good)."""
    return [(row.generation, row.wrapped is None) for row in before] == [
        (row.generation, row.wrapped is None) for row in now]


def sealed_blob_header(payload: bytes) -> Header | None:
    """The header of a sealed blob, None for a plain one."""
    parsed = parse(payload)
    return None if parsed is None else parsed[0]


def sealed_subjects(paths: Sequence[Path], data: bytes) -> set[str]:
    """The subjects whose keys seal the free-text fields (at ``paths``, its type's) of an
    event's stored bytes."""
    if not paths or _MARKER_TEXT not in data:
        return set()
    body = msgspec.json.decode(data)
    found: list[Any] = []
    for path in paths:
        _walk(body, path, _collect(found))
    return {header.subject for header in map(marker_header, found) if header is not None}


def marker_header(value: Any) -> Header | None:
    """The header of a sealed field's marker; None for anything else."""
    if not _is_marker(value):
        return None
    try:
        envelope = base64.b64decode(value[len(_SEALED_TEXT):] if isinstance(value, str)
                                    else value[SEALED])
    except ValueError:
        return None
    parsed = parse(envelope)
    return None if parsed is None else parsed[0]


def refuse_unsealed_read(tenant: str, payload: bytes) -> None:
    """A log opened without a keyring reading a sealed blob: `KeyringRequired`."""
    if payload.startswith(MAGIC):
        header = sealed_blob_header(payload)
        raise KeyringRequired(tenant, "" if header is None else header.subject)


def _refuse_plain_view(tenant: Any, column: str, raw: bytes, paths: Sequence[Path]) -> None:
    """`SealRefused` for a view column holding free text in the clear at one of its sealed
    ``paths`` (written behind the log's back: the log only ever folds sealed fields into
    it)."""
    if raw in (b"{}", b"null", b"[]"):
        return
    body = msgspec.json.decode(raw)
    for path in paths:
        values: list[Any] = [body] if not path else []
        _walk(body, path, _collect(values))
        for value in values:
            if value not in (None, {}, []) and not _is_marker(value) and value != ERASED:
                raise SealRefused(tenant or "", "", f"the view column {column!r} holds "
                                  "plaintext although the log is encrypted: refused, never read"
                                  + PLAINTEXT_HINT)


def field_values(paths: Sequence[Path], body: Any) -> list[tuple[Path, list[Any]]]:
    """The values at each sealed field path (``paths``, its type's) of an event in
    ``body`` (its decoded JSON), path by path."""
    found = []
    for path in paths:
        values: list[Any] = []
        _walk(body, path, _collect(values))
        found.append((path, values))
    return found


def replace_field_values(body: Any, path: tuple[str, ...], values: list[Any]) -> None:
    """Put ``values`` (as `field_values` gave them, changed) back at ``path`` in ``body``."""
    _walk(body, path, _replay(values))


def field_kind(tag: str, path: tuple[str, ...]) -> str:
    """What a sealed field's envelope says it is (``tag:path``)."""
    return _kind(tag, path)


def is_marker(value: Any) -> bool:
    """Whether ``value`` is a sealed field's marker."""
    return _is_marker(value)


def _is_marker(value: Any) -> bool:
    if isinstance(value, str):
        return value.startswith(_SEALED_TEXT)
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(SEALED), str)


def _seal_value(tenant: str, header: Header, key: DataKey, value: Any) -> Any:
    if value is None or value == {} or value == []:
        return value
    envelope = base64.b64encode(key.seal(tenant, header, msgspec.json.encode(value),
                                         derived=False)).decode()
    return _SEALED_TEXT + envelope if isinstance(value, str) else {SEALED: envelope}


def _collect(found: list[Any]) -> Any:
    def collect(value: Any) -> Any:
        found.append(value)
        return value

    return collect


def _replay(values: list[Any]) -> Any:
    iterator = iter(values)
    return lambda _value: next(iterator)


def _walk(body: Any, path: tuple[str, ...], change: Any) -> None:
    """Replace the value at ``path`` in ``body`` by ``change(value)`` (``*``: each item)."""
    if not path or body is None:
        return
    step, rest = path[0], path[1:]
    if step == "*":
        if isinstance(body, list):
            for index, item in enumerate(body):
                if rest:
                    _walk(item, rest, change)
                else:
                    body[index] = change(item)
        return
    if not isinstance(body, dict) or step not in body:
        return
    if rest:
        _walk(body[step], rest, change)
    else:
        body[step] = change(body[step])


def context_of(tenant: str, subject: str, generation: int) -> bytes:
    """What a wrapped key is bound to (`KeyProvider.wrap`'s ``context``)."""
    return hashlib.sha256(msgspec.json.encode(["eventlog-data-key", tenant, subject,
                                               generation])).digest()
