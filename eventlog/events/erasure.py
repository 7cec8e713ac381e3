"""The erasure event (issue 32): a subject's data key was destroyed. Tags are stored
forever: never rename one.

Appended to the stream ``erasure:<subject>`` of the tenant by `EventLog.erase`, after the
log destroyed the key: who asked, why, when (the event's recorded time), and how many key
generations were destroyed. The events and blobs sealed under the key stay as they are
(the chain holds); only the key is gone, so their data can never be read again.
"""

from __future__ import annotations

import msgspec

from eventlog.events import Event, register_event

ERASURE_STREAM_PREFIX = "erasure:"


@register_event
class SubjectKeyDestroyed(Event, tag="subject_erased", frozen=True, kw_only=True):
    """Every data key of ``subject`` was destroyed: its sealed data is erased."""

    subject: str
    reason: str = ""
    actor: str = ""
    generations: int = msgspec.field(default=0)
    """How many key generations this erasure destroyed."""
    through: int = msgspec.field(default=0)
    """The highest key generation this erasure erased: every generation up to it is
    erased, whatever the key table holds (`eventlog.log._erasures`). 0 in an erasure
    recorded before this field: then it erased ``generations`` more than the previous one."""

    def home_stream(self) -> str | None:
        """The subject's erasure stream."""
        return ERASURE_STREAM_PREFIX + self.subject
