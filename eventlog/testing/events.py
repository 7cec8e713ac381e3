"""The event types the contract suite writes (and this repo's own tests use)."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from eventlog import Event, register_event


@register_event
class Noted(Event, tag="test.noted", frozen=True):
    """A test event carrying some text."""

    text: str
    number: int = 0


@register_event
class Holding(Noted, tag="test.holding", frozen=True):
    """A `Noted` that names the blobs it references and the references it gives up (hex
    SHA-256 digests), as a checkpoint names its state and a tombstone its releases:
    appended with ``attach=`` its blobs and ``release=`` its releases, its stream holds
    one reference to each blob until it gives them up."""

    blobs: list[str] = msgspec.field(default_factory=list)
    released: dict[str, int] = msgspec.field(default_factory=dict)

    def blob_digests(self) -> tuple[bytes, ...]:
        """The blobs named."""
        return tuple(bytes.fromhex(digest) for digest in self.blobs)

    def blob_releases(self) -> Mapping[bytes, int]:
        """The references given up."""
        return {bytes.fromhex(digest): count for digest, count in self.released.items()}
