"""The event an import records about the copy it made (no importer is loaded to import it).

Registered in `eventlog.default_registry` when this module is imported; `eventlog.log`
imports it, so every log knows it. Its tag is stored forever: never rename it.
"""

from __future__ import annotations

from eventlog.events import Event, register_event

IMPORT_STREAM_PREFIX = "import:"
"""Each import that records something about its copy does so on a stream of its own."""


@register_event
class StateWithheld(Event, tag="state_withheld", frozen=True, kw_only=True):
    """An import wrote events whose state blobs its file left out (an export made
    without state): these blobs are absent by intent, not lost.

    `verify` reports a missing blob named here as withheld (a notice), and any other
    missing blob as a finding. Written in the same transaction as the import's first
    events; a long list is split over several events of the import's stream.
    """

    digests: list[str]
    """The withheld blobs' SHA-256 digests (hex), sorted."""
    exported_at: str = ""
    """When the file was exported (its header's time)."""
    source: str = ""
    """The backend the file was exported from (its header's ``source``)."""
