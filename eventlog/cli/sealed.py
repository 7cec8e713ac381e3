"""How the forensic commands show an encrypted log's sealed data (issue 32): per field and
per payload, the value (keyring given, key live), ``erased`` (the subject's key destroyed:
when, by whom and why, from its erasure event), or ``sealed`` (no keyring given).

The commands read events as stored (`EventLog.read_all`), whose sealed fields are markers
(``{"$sealed": …}``); `Unsealer.event` gives each event's stored bytes with every marker
replaced by what it shows. Payloads go through `Unsealer.blobs`, which never raises for
one it cannot open: it leaves it out and says why (`Payloads.unread`). The markers the
stores fold into views, and ``{"$erased": true}``, are labelled by `label` wherever a
value is rendered (`eventlog.cli.render`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from eventlog.cli.options import utc_text
from eventlog.errors import KeyringRequired, SealError, SubjectErased
from eventlog.events.erasure import ERASURE_STREAM_PREFIX, SubjectKeyDestroyed
from eventlog.log import EventLog
from eventlog.log._sealing import (
    ERASED,
    ERASED_TEXT,
    field_kind,
    field_values,
    is_marker,
    marker_header,
    replace_field_values,
    sealed_blob_header,
)
from eventlog.records import RecordedEvent

SEALED_LABEL = "[sealed: no keyring given]"
"""What a sealed value shows when no keyring was given."""
ERASED_LABEL = "[erased]"
"""What an erased value shows when its erasure event is not at hand."""


def label(value: Any) -> Any:
    """``value`` with every sealed marker and every erased value replaced by its label
    (sealed markers reach here only when no keyring opened them)."""
    if value in (ERASED, ERASED_TEXT):
        return ERASED_LABEL
    if is_marker(value):
        return SEALED_LABEL
    if isinstance(value, dict):
        return {key: label(item) for key, item in value.items()}
    if isinstance(value, list):
        return [label(item) for item in value]
    return value


def label_of(value: Any) -> str | None:
    """The label of a sealed marker or an erased value; None for any other value."""
    if isinstance(value, str):
        if value == ERASED_TEXT:
            return ERASED_LABEL
        return SEALED_LABEL if value.startswith("$sealed:") else None
    if isinstance(value, dict) and len(value) == 1:
        if value == ERASED:
            return ERASED_LABEL
        return SEALED_LABEL if is_marker(value) else None
    return None


class Payloads(dict[bytes, bytes]):
    """Payloads read by digest, with why each one left out could not be read."""

    def __init__(self, found: dict[bytes, bytes], unread: dict[bytes, str] | None = None
                 ) -> None:
        super().__init__(found)
        self.unread: dict[bytes, str] = unread or {}
        """Digest → what to show instead (``erased …``, ``sealed …``)."""

    def __bool__(self) -> bool:
        return bool(len(self) or self.unread)  # what could not be read is still told


class Unsealer:
    """Opens what the commands show, one log, with erasure notes looked up once each."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._notes: dict[tuple[str, str], str] = {}

    async def erased(self, tenant_id: str, subject: str) -> str:
        """``erased <when> by <who>: <why>`` from the subject's erasure event, or the bare
        label when the log holds none."""
        key = (tenant_id, subject)
        if key not in self._notes:
            text = ERASED_LABEL
            async for recorded in self.log.read_stream(tenant_id,
                                                       ERASURE_STREAM_PREFIX + subject):
                event = recorded.event
                if isinstance(event, SubjectKeyDestroyed):
                    who = f" by {event.actor}" if event.actor else ""
                    why = f": {event.reason}" if event.reason else ""
                    text = (f"[erased {utc_text(recorded.recorded_at)}"
                            f"{who}{why}]")
            self._notes[key] = text
        return self._notes[key]

    async def event(self, recorded: RecordedEvent) -> RecordedEvent:
        """``recorded`` with its stored bytes showing each sealed field as its value, as
        erased, or as sealed (its decoded ``event`` and hashes unchanged)."""
        paths = self.log.registry.sealed_fields(recorded.type)
        if not paths or b'"$sealed' not in recorded.data:
            return recorded
        try:
            body = msgspec.json.decode(recorded.data)
        except msgspec.DecodeError:
            return recorded
        for path, found in field_values(paths, body):
            shown = [await self._field(recorded, path, value) for value in found]
            replace_field_values(body, path, shown)
        return msgspec.structs.replace(recorded, data=msgspec.json.encode(body))

    async def _field(self, recorded: RecordedEvent, path: tuple[str, ...], value: Any) -> Any:
        header = marker_header(value)
        if header is None:
            return value
        sealer = self.log.sealer
        if sealer is None:
            return SEALED_LABEL
        try:
            opened = await sealer.open_field(recorded.tenant_id, value, recorded.stream_id,
                                             field_kind(recorded.type, path))
        except SealError as error:
            return f"[refused: {error}]"
        if opened in (ERASED, ERASED_TEXT):
            return await self.erased(recorded.tenant_id, header.subject)
        return opened

    async def blobs(self, tenant_id: str, digests: Iterable[bytes]) -> Payloads:
        """The payloads of ``digests`` that open (`EventLog.get_blobs`); each that does not
        is left out with what to show instead: erased (when, why), sealed (no keyring),
        or refused (why)."""
        wanted = list(dict.fromkeys(digests))
        try:
            return Payloads(await self.log.get_blobs(tenant_id, wanted))
        except SealError:
            pass
        stored = await self.log.as_stored().get_blobs(tenant_id, wanted)
        found: dict[bytes, bytes] = {}
        unread: dict[bytes, str] = {}
        for digest, payload in stored.items():
            header = sealed_blob_header(payload)
            if header is None:
                found[digest] = payload
                continue
            try:
                found.update(await self.log.get_blobs(tenant_id, [digest]))
            except SubjectErased:
                unread[digest] = await self.erased(tenant_id, header.subject)
            except KeyringRequired:
                unread[digest] = SEALED_LABEL
            except SealError as error:
                unread[digest] = f"[refused: {error}]"
        return Payloads(found, unread)


def unread_reason(payloads: object, digest: bytes, default: str) -> str:
    """Why ``digest`` is not among ``payloads`` (`Payloads.unread`), else ``default``."""
    unread = getattr(payloads, "unread", None)
    return unread.get(digest, default) if isinstance(unread, dict) else default
