"""The event type the contract suite writes (and this repo's own tests use)."""

from __future__ import annotations

from eventlog import Event, register_event


@register_event
class Noted(Event, tag="test.noted", frozen=True):
    """A test event carrying some text."""

    text: str
    number: int = 0
