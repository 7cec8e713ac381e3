"""Reading logs that hold events of types this process never registered.

An application registers its own event types (``@register_event``) in its own process;
the ``eventlog`` command does not import the application, yet must still list, export,
import, replay and verify its log. It opens logs with `LenientRegistry`, which decodes
an unknown tag as an `OpaqueEvent` instead of raising. Nothing is lost: a recorded
event keeps its stored type and exact bytes (which the hash chain covers and the command
prints), and the library's projections fold only the types they know, so the views come
out the same as in the application's process.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventlog.errors import CorruptEvent
from eventlog.events import E, Event, EventRegistry


class OpaqueEvent(Event, frozen=True, tag="eventlog.cli.opaque"):
    """An event whose type this process does not know, with its stored fields.

    Never appended (its tag is registered nowhere); it only stands in for a stored event.
    """

    fields: dict[str, Any] = msgspec.field(default_factory=dict)


class UndecodableEvent(Event, frozen=True, tag="eventlog.cli.undecodable"):
    """A stored event whose bytes do not decode as its (known) type: tampering or
    corruption. Never appended; it stands in so that reading commands carry on past it
    and ``verify`` lists it as a finding."""

    error: str
    fields: dict[str, Any] | None = None
    """The stored fields when the bytes are still JSON (None when they are not)."""


class LenientRegistry(EventRegistry):
    """``base`` (the default registry unless given), but unknown tags decode as
    `OpaqueEvent` and bytes that do not decode as their type as `UndecodableEvent`.
    Encoding and registering go to ``base`` unchanged."""

    def __init__(self, base: EventRegistry) -> None:
        super().__init__()
        self._base = base

    def register(self, event_type: E) -> E:
        return self._base.register(event_type)

    def copy(self) -> EventRegistry:
        return LenientRegistry(self._base.copy())

    def __contains__(self, tag: object) -> bool:
        return tag in self._base

    @property
    def tags(self) -> frozenset[str]:
        return self._base.tags

    def sealed_fields(self, tag: str) -> tuple[tuple[str, ...], ...]:
        return self._base.sealed_fields(tag)

    def encode(self, event: object) -> tuple[str, bytes]:
        return self._base.encode(event)

    @property
    def strict(self) -> EventRegistry:
        return self._base

    def corrupt(self, error: CorruptEvent) -> Event:
        return UndecodableEvent(error=error.detail)

    def decode(
        self, tag: str, data: bytes, *, stream_id: str | None = None, version: int | None = None
    ) -> Event:
        if tag in self._base:
            try:
                return self._base.decode(tag, data, stream_id=stream_id, version=version)
            except CorruptEvent as error:
                decoded = _json_or_none(data)
                return UndecodableEvent(
                    error=error.detail,
                    fields=decoded if isinstance(decoded, dict) else None)
        decoded = _json_or_none(data)
        return OpaqueEvent(fields=decoded if isinstance(decoded, dict) else {"value": decoded})


class ImportingRegistry(LenientRegistry):
    """The check an import makes before writing: an event of a known type must decode
    as that type, and one of a type this process does not know must at least be a JSON
    object (naming no other type); anything else raises `CorruptEvent`.

    A reading command carries on past such an event (`LenientRegistry`); an import must
    not write one, since nothing could read it back as what its type says.
    """

    def copy(self) -> EventRegistry:
        return ImportingRegistry(self._base.copy())

    def decode(
        self, tag: str, data: bytes, *, stream_id: str | None = None, version: int | None = None
    ) -> Event:
        if tag in self._base:
            return self._base.decode(tag, data, stream_id=stream_id, version=version)
        decoded = _json_or_none(data)
        if not isinstance(decoded, dict) or decoded.get("type", tag) != tag:
            raise CorruptEvent(tag, "not a JSON object of its type", stream_id=stream_id,
                               version=version)
        return OpaqueEvent(fields=decoded)


def _json_or_none(data: bytes) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
