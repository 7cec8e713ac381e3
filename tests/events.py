"""Event types used only by the tests."""

from __future__ import annotations

from eventlog import Event, register_event


@register_event
class Noted(Event, tag="test.noted"):
    """A test event carrying some text."""

    text: str
    number: int = 0
