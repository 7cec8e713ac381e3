"""Events: frozen msgspec Structs in a tagged union, and the registry that maps tags to types.

Each store's event types live in a module here (`checkpoints`, `interrupts`, `threads`)
that imports no store, so projections and tools can know them without loading one.

Schema evolution rules (msgspec's): a tag is stored forever, so never rename one; a new
field gets a default; a field never changes its type. The stored bytes are exactly
``msgspec.json.encode(event)``, which carries the tag in its ``"type"`` field, and the
hash chain covers those bytes.

A field that holds personal free text is annotated `SEALED` (``Annotated[str, SEALED]``):
on an encrypted log the log seals what the registry says each type declares
(`EventRegistry.sealed_fields`), and nothing else (`eventlog.events._sealed`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import msgspec

from eventlog.errors import (
    CorruptEvent,
    InvalidEvent,
    InvalidInput,
    UnknownEventType,
    UnreadableEvent,
)
from eventlog.events._sealed import SEALED as SEALED
from eventlog.events._sealed import Path as Path
from eventlog.events._sealed import record_key as record_key
from eventlog.events._sealed import sealed_paths


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base class of every event. Subclass with an explicit, stable ``tag=``."""

    def stored_body(self) -> Any | None:
        """What is stored for this event when it is not the event as it is: builtins that
        decode back to an equal event (`ThreadCheckpointPut` leaves out what its own fields
        repeat). None by default: the event is stored as it is."""
        return None

    def blob_digests(self) -> tuple[bytes, ...]:
        """The SHA-256 digests of the blobs this event references (none by default).

        An event type that carries a blob's digest (as `CheckpointCreated` carries its
        state's) declares it here, so an export moves the blob together with the event.
        """
        return ()

    def home_stream(self) -> str | None:
        """The one stream this event may be appended to, or None for any stream.

        Events that name their stream's subject (a session's checkpoint, a batch's claim)
        say so here: the log refuses to append them elsewhere, import refuses a file that
        holds one elsewhere, and `verify` reports one found elsewhere, so no forged stream
        can fold into another subject's view rows.
        """
        return None

    def sealed_record(self) -> str:
        """The view record this event's sealed fields are folded into (`record_key` of its
        key: a checkpoint's, a batch's), or empty for none. An encrypted log binds each
        sealed value of the event to it (with its subject and stream), so a value copied
        into another record's view row, even of the same stream, is refused on read."""
        return ""

    def blob_releases(self) -> Mapping[bytes, int] | None:
        """The blob references this event gives up, by digest (none by default).

        None means every reference the events of its stream still hold (a tombstone of
        a log written before tombstones named their releases). `verify` folds
        `blob_digests` and this to know how many references each blob must have.
        """
        return {}


def fold_blob_references(held: Counter[bytes], event: Event) -> None:
    """Update ``held`` (the blob references one stream's events hold, by digest) with
    ``event``: each digest it names adds one; its releases give theirs up (every one the
    stream holds when `Event.blob_releases` is None)."""
    held.update(event.blob_digests())
    released = event.blob_releases()
    if released is None:
        held.clear()
        return
    for digest, count in released.items():
        held[digest] = max(held[digest] - count, 0)


def release_beyond(held: Mapping[bytes, int], released: Mapping[bytes, int]) -> bytes | None:
    """The first digest (bytewise) that ``released`` gives up more references to than
    ``held`` (what one stream's events hold) has, or None when every release is held."""
    return next((digest for digest in sorted(released)
                 if released[digest] > held.get(digest, 0)), None)


E = TypeVar("E", bound=type[Event])

_encoder = msgspec.json.Encoder()


class EventRegistry:
    """Maps type tags to event classes, and encodes and decodes events by tag."""

    def __init__(self, types: Iterable[type[Event]] = ()) -> None:
        self._types: dict[str, type[Event]] = {}
        self._decoders: dict[str, msgspec.json.Decoder[Any]] = {}
        self._sealed: dict[str, tuple[Path, ...]] = {}
        for event_type in types:
            self.register(event_type)

    def register(self, event_type: E) -> E:
        """Register ``event_type`` under its tag; usable as a class decorator."""
        tag = tag_of(event_type)
        known = self._types.get(tag)
        if known is not None and known is not event_type:
            raise InvalidInput("event type", f"tag {tag!r} is already registered to {known!r}")
        sealed = sealed_paths(event_type) if known is None else self._sealed[tag]
        self._types[tag] = event_type
        self._decoders[tag] = msgspec.json.Decoder(event_type)
        self._sealed[tag] = sealed
        return event_type

    def sealed_fields(self, tag: str) -> tuple[Path, ...]:
        """Where the fields a ``tag`` event declares `SEALED` are in its JSON (empty for a
        type that seals none, or a tag this registry does not know)."""
        return self._sealed.get(tag, ())

    def copy(self) -> EventRegistry:
        """A new registry holding the same types, to extend without touching this one."""
        return EventRegistry(self._types.values())

    def __contains__(self, tag: object) -> bool:
        return tag in self._types

    def type_of(self, tag: str) -> type[Event] | None:
        """The event type registered under ``tag``, or None."""
        return self._types.get(tag)

    @property
    def tags(self) -> frozenset[str]:
        """Every registered tag."""
        return frozenset(self._types)

    def encode(self, event: object) -> tuple[str, bytes]:
        """Return ``(tag, bytes)`` for a registered event; refuse anything else."""
        event_type = type(event)
        tag = getattr(getattr(event_type, "__struct_config__", None), "tag", None)
        if not isinstance(event, Event) or not isinstance(tag, str):
            raise InvalidEvent("events", f"{event_type.__name__} is not an Event subclass")
        if self._types.get(tag) is not event_type:
            raise InvalidEvent("events", f"event type {tag!r} is not registered")
        body = event.stored_body()
        return tag, _encoder.encode(event if body is None else body)

    def refuse_unreadable(self, tag: str, data: bytes, stream_id: str) -> None:
        """Raise `UnreadableEvent` when ``data`` (what `encode` made of a ``tag`` event)
        does not decode back as its type: such an event, stored, could never be read."""
        try:
            self.strict._decoders[tag].decode(data)
        except msgspec.ValidationError as error:
            raise UnreadableEvent(stream_id, tag, str(error)) from error

    @property
    def strict(self) -> EventRegistry:
        """The registry whose `decode` raises `CorruptEvent` for bytes that do not decode
        as their type: this one (a lenient registry's base)."""
        return self

    def corrupt(self, error: CorruptEvent) -> Event:
        """What a stored row that cannot be read as written decodes to: by default
        nothing (``error`` is raised); a lenient registry may stand something in."""
        raise error

    def decode(
        self, tag: str, data: bytes, *, stream_id: str | None = None, version: int | None = None
    ) -> Event:
        """Decode stored bytes by their tag; an unknown tag raises `UnknownEventType`, bytes
        that do not decode as their tag's type raise `CorruptEvent`."""
        decoder = self._decoders.get(tag)
        if decoder is None:
            raise UnknownEventType(tag, stream_id=stream_id, version=version)
        try:
            event: Event = decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise CorruptEvent(tag, str(error), stream_id=stream_id, version=version) from error
        return event


def tag_of(event_type: type[Event]) -> str:
    """The tag of an event class; a class that is not an `Event` subclass is refused."""
    if not isinstance(event_type, type) or not issubclass(event_type, Event):
        raise InvalidEvent("event type", f"{event_type!r} is not an Event subclass")
    tag = event_type.__struct_config__.tag
    if not isinstance(tag, str):
        raise InvalidEvent("event type", f"{event_type.__name__} has no tag=")
    return tag


default_registry = EventRegistry()


def register_event(event_type: E) -> E:
    """Register an event class in the default registry (a class decorator)."""
    return default_registry.register(event_type)
