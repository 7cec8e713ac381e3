"""Contract: each event's writer signature (issue 40 §1), as storage keeps it and as the log
makes and checks it.

Storage stores the ``signature`` an append gives, byte for byte (None stays None), on
every write path (`append`, `append_batch`, `append_at_head`) and gives it back on every
read; `signing_starts` finds each tenant's first signed event. The log signs every append
when its keyring holds a writer key, and its checked read side (`EventLog.signed`) and
`verify` refuse what the key did not sign.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog, ForgedEvent, StreamAppend
from eventlog.clock import read_clock
from eventlog.crypto import init_keyring
from eventlog.ids import uuid7
from eventlog.log._append import Draft, prepare
from eventlog.signing import generate_key_pair, load_public_key
from eventlog.testing.contract._base import ContractBackend, ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle
from eventlog.writer_keys import SIGNATURE_SIZE, WriterKeys


def _signature(number: int) -> bytes:
    """72 bytes standing for a signature (storage never checks one)."""
    return bytes([number]) * SIGNATURE_SIZE


async def _request(log: EventLog, tenant_id: str, stream_id: str,
                   signatures: list[bytes | None]) -> Any:
    """`_chained` onto the stream's stored head."""
    head = await log.storage.stream_head(tenant_id, stream_id)
    return _chained(log, tenant_id, stream_id, signatures, head)


def _chained(log: EventLog, tenant_id: str, stream_id: str, signatures: list[bytes | None],
             head: tuple[int, bytes] | None) -> Any:
    """An append of one event per signature, chained onto ``head``, each carrying its
    signature as an import's would: the `AppendRequest` storage takes (typed loosely: the
    suite reaches storage only through ``log.storage``)."""
    now = read_clock(log.clock)
    drafts = []
    for number, signature in enumerate(signatures):
        event = Noted(text=f"{stream_id}-{number}")
        tag, data = log.registry.encode(event)
        drafts.append(Draft(uuid7(), tag, data, event, now, None, signature))
    return prepare(tenant_id, stream_id, head, drafts, {}, {}, log.projections)


async def _everywhere(log: EventLog, tenant_id: str, stream_id: str
                      ) -> list[list[bytes | None]]:
    """The stream's signatures as each read gives them: `read_stream`, `read_all`,
    `find_event` and `scan_streams`."""
    await settle(log)
    storage = log.storage
    streamed = await storage.read_stream(tenant_id, stream_id, 1, 100)
    paged, _ = await storage.read_all(None, 1000, tenant_id)
    found = [await storage.find_event(tenant_id, event.event_id) for event in streamed]
    scanned = [e async for e in storage.scan_streams(tenant_id) if e.stream_id == stream_id]
    return [[e.signature for e in streamed],
            [e.signature for e in paged if e.stream_id == stream_id],
            [None if e is None else e.signature for e in found],
            [e.signature for e in scanned]]


class SignatureStorageCalls(ContractBase):
    """Contract: the ``signature`` column, asked of the backend directly."""

    async def test_append_stores_each_signature_as_given(self, log: EventLog) -> None:
        """`append` stores each event's signature byte for byte (None stays None), and
        `read_stream`, `read_all`, `find_event` and `scan_streams` give it back."""
        expected = [_signature(1), None, _signature(2)]
        await log.storage.append(await _request(log, "t", "s", expected))
        assert [expected] * 4 == await _everywhere(log, "t", "s")

    async def test_append_batch_and_append_at_head_store_signatures(
        self, log: EventLog
    ) -> None:
        """`append_batch` (one request per stream) and `append_at_head` store each event's
        signature as `append` does."""
        await log.storage.append_batch([
            await _request(log, "t", "a", [_signature(3), None]),
            await _request(log, "t", "b", [None, _signature(4)])])
        await log.storage.append_at_head(
            "t", "a", lambda head: _chained(log, "t", "a", [_signature(5)], head))
        assert ([[_signature(3), None, _signature(5)]] * 4,
                [[None, _signature(4)]] * 4) == (
            await _everywhere(log, "t", "a"), await _everywhere(log, "t", "b"))

    async def test_signing_starts_names_each_tenants_first_signed_event(
        self, log: EventLog
    ) -> None:
        """`signing_starts` gives, per tenant, the position of its first signed event:
        tenants without one are left out, and one tenant can be asked alone."""
        await log.append("t", "old", [Noted(text="unsigned")])
        await log.append("u", "old", [Noted(text="unsigned")])
        await log.storage.append(await _request(log, "t", "s", [None, _signature(6)]))
        await log.storage.append(await _request(log, "t", "s", [_signature(7)]))
        first = (await log.storage.read_stream("t", "s", 2, 1))[0].position
        assert ({"t": first}, {"t": first}, {}) == (
            await log.storage.signing_starts(None), await log.storage.signing_starts("t"),
            await log.storage.signing_starts("u"))


class LogSignaturesContract(ContractBase):
    """Contract: a log whose keyring holds a writer key signs every append; its checked
    read side and `verify` refuse an event the key did not sign."""

    @pytest.fixture
    def keyring(self, tmp_path: Path) -> str:
        """A fresh keyring file with a writer key."""
        return str(init_keyring(tmp_path / "keyring.json").path)

    async def test_every_append_path_is_signed_by_the_writer_key(
        self, backend: ContractBackend, keyring: str
    ) -> None:
        """`append`, `append_batch` and the stores' appends sign each event's hash with
        the keyring's writer key; verify checks every one and finds nothing."""
        async with backend.open(keyring=keyring) as log:
            await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
            await log.append_batch([StreamAppend(tenant_id="t", stream_id="x",
                                                 events=[Noted(text="c")])])
            await log.retention.hold("t", "someone")
            await settle(log)
            events = (await log.read_all(tenant_id="t")).events
            keys = log.writer_keys
            report = await log.verify("t")
        assert keys is not None
        assert ([None] * 4, True, 4) == (
            [keys.check(e.hash, e.signature or b"") for e in events], report.ok,
            report.signed_events)

    async def test_the_checked_read_refuses_what_the_writer_key_did_not_sign(
        self, backend: ContractBackend, keyring: str
    ) -> None:
        """An event stored behind the log with a made-up signature is refused as forged by
        `EventLog.signed` (tenant, stream, version, reason) and named by `verify`; one
        stored unsigned after signed events is refused and named as unsigned."""
        async with backend.open(keyring=keyring) as log:
            await log.append("t", "s", [Noted(text="a")])
            await log.append("t", "u", [Noted(text="b")])
            assert log.signer is not None
            bogus = bytes.fromhex(log.signer.key_id) + os.urandom(64)
            await log.storage.append(await _request(log, "t", "s", [bogus]))
            await log.storage.append(await _request(log, "t", "u", [None]))
            refused = []
            for stream in ("s", "u"):
                with pytest.raises(ForgedEvent) as caught:
                    _ = [event async for event in log.signed.read_stream("t", stream)]
                refused.append((caught.value.stream_id, caught.value.version,
                                caught.value.reason))
            report = await log.verify("t")
        assert ([("s", 2, "forged"), ("u", 2, "unsigned")],
                [("s", 2, "forged"), ("u", 2, "unsigned")]) == (
            refused, [(p.stream_id, p.version, p.kind) for p in report.problems])

    async def test_only_the_public_key_is_needed_to_check(
        self, backend: ContractBackend, keyring: str
    ) -> None:
        """A log opened without the keyring, given only the writer's public key, checks
        the signatures (verify and the checked read); another key calls them forged."""
        backend.require_persistent()
        async with backend.open(keyring=keyring) as log:
            await log.append("t", "s", [Noted(text="a")])
            assert log.writer_keys is not None
            public = log.writer_keys.public_keys()
        stranger = WriterKeys([load_public_key(generate_key_pair()[1])])
        async with backend.open(writer_keys=public) as log:
            report = await log.verify("t")
            read = [event.version async for event in log.signed.read_stream("t", "s")]
        async with backend.open(writer_keys=stranger.public_keys()) as log:
            other = await log.verify("t")
        assert (True, True, [1], ["forged"]) == (
            report.ok, report.signatures_checked, read, [p.kind for p in other.problems])
