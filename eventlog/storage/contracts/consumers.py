"""The consumer contract: durable positions of named consumers of the log, each held by
one holder at a time under a lease with a fencing token.

A consumer (`EventLog.subscribe`) reads the log in gap-safe order (`read_with_cursors`:
the same horizon and cursors as `EventStorage.read_all`) and records how far it has
acknowledged in a row of the log's own database. Two holders never both hold a consumer:
each claim takes a higher token, and every write of a holder (an ack, a renewal, a
projection's transaction) names its token and is refused once another claim (or a reset)
moved it on. Clocks only decide when a lease may be taken over, never whether a write is
valid. The decisions are `decide_claim` (no I/O); a backend reads and writes the row
around it inside one transaction.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import msgspec

from eventlog.errors import ConsumerHeld, ConsumerScopeChanged
from eventlog.records import StoredEvent
from eventlog.storage.contracts.lifecycle import StorageLifecycle


class ConsumerRow(msgspec.Struct, frozen=True, kw_only=True):
    """One consumer as stored: its scope, how far it acknowledged, and who holds it."""

    name: str
    tenant_id: str | None
    """The one tenant it reads, or None for the whole log."""
    types: tuple[str, ...] | None
    """The event types it is delivered, or None for every type."""
    cursor: str | None
    """The `read_all` cursor after its last acknowledged event (None: the beginning)."""
    token: int
    """The fencing token of the latest claim (or reset): higher each time."""
    holder: str | None
    """Who holds it now (host:pid:random, or the caller's name); None once released."""
    lease_until: datetime | None
    """When the holder's lease ends unless renewed (an ack renews it)."""
    updated_at: datetime
    """When it was last claimed, acknowledged or reset."""

    @property
    def scope(self) -> str:
        """Its scope in words: ``tenant 't' / types a, b``."""
        return describe_scope(self.tenant_id, self.types)


class ConsumerClaim(msgspec.Struct, frozen=True, kw_only=True):
    """What a holder asks for when it opens a consumer."""

    name: str
    tenant_id: str | None
    types: tuple[str, ...] | None
    start: str | None
    """The cursor a NEW consumer starts after (None: the beginning of its scope)."""
    holder: str
    now: datetime
    lease_until: datetime


def describe_scope(tenant_id: str | None, types: Sequence[str] | None) -> str:
    """A consumer's scope in words, for messages and ``eventlog consumers``."""
    where = "the whole log" if tenant_id is None else f"tenant {tenant_id!r}"
    return where + ("" if types is None else " / types " + ", ".join(types))


def encode_types(types: tuple[str, ...] | None) -> str | None:
    """The ``types`` column: a JSON list, or NULL for every type."""
    return None if types is None else json.dumps(list(types))


def decode_types(text: str | None) -> tuple[str, ...] | None:
    """The ``types`` column read back."""
    return None if text is None else tuple(str(each) for each in json.loads(text))


def decide_claim(existing: ConsumerRow | None, claim: ConsumerClaim) -> ConsumerRow:
    """The row a claim leaves: a new consumer at ``claim.start``, or the existing one with
    the claimant as holder under the next token. Raises `ConsumerHeld` while another
    holder's lease runs (or the same holder name's: a second opener in one process is a
    second holder), `ConsumerScopeChanged` when the scope differs from the stored one."""
    if existing is None:
        return ConsumerRow(
            name=claim.name, tenant_id=claim.tenant_id, types=claim.types, cursor=claim.start,
            token=1, holder=claim.holder, lease_until=claim.lease_until, updated_at=claim.now)
    if (existing.tenant_id, existing.types) != (claim.tenant_id, claim.types):
        raise ConsumerScopeChanged(claim.name, existing.scope,
                                   describe_scope(claim.tenant_id, claim.types))
    if (existing.holder is not None and existing.lease_until is not None
            and existing.lease_until > claim.now):
        raise ConsumerHeld(claim.name, existing.holder, existing.lease_until.isoformat())
    return msgspec.structs.replace(existing, token=existing.token + 1, holder=claim.holder,
                                   lease_until=claim.lease_until, updated_at=claim.now)


class ConsumerStorage(StorageLifecycle):
    """Durable consumers' rows, and the gap-safe page read they follow the log with."""

    @abc.abstractmethod
    async def read_with_cursors(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> list[tuple[StoredEvent, str]]:
        """`EventStorage.read_all`'s page after ``after``, each event with the cursor that
        stands just after it (resuming from it never skips and never repeats an event)."""

    @abc.abstractmethod
    async def end_cursor(self) -> str | None:
        """A cursor after every event readable by `read_all` now, and before every event
        that becomes readable later; None when the log is empty."""

    @abc.abstractmethod
    async def claim_consumer(self, claim: ConsumerClaim) -> ConsumerRow:
        """In ONE transaction, read the consumer's row, decide with `decide_claim` and
        store what it returns: the row, now held by the claimant. Two concurrent claims
        never both succeed while either's lease runs. Its errors pass through."""

    @abc.abstractmethod
    async def renew_consumer(self, name: str, token: int, lease_until: datetime) -> bool:
        """Move the lease of the holder of ``token`` to ``lease_until``; False (changing
        nothing) when ``token`` is no longer the consumer's."""

    @abc.abstractmethod
    async def ack_consumer(self, name: str, token: int, cursor: str, now: datetime,
                           lease_until: datetime) -> bool:
        """Store ``cursor`` as the consumer's position (and renew the lease) if ``token``
        is still its own; False, changing nothing, otherwise."""

    @abc.abstractmethod
    async def release_consumer(self, name: str, token: int) -> None:
        """End the lease of the holder of ``token`` (nothing if it is no longer its own)."""

    @abc.abstractmethod
    def consumer_transaction(
        self, name: str, token: int, cursor: str, now: datetime, lease_until: datetime
    ) -> AbstractAsyncContextManager[Any]:
        """A write transaction for a projection: it first locks the consumer's row if
        ``token`` is still its own (else raises `ConsumerFenced`, having written nothing),
        yields the connection the caller writes its own tables on (asyncpg's on
        PostgreSQL, SQLAlchemy's ``AsyncConnection`` on SQLite, None in memory), and
        stores ``cursor`` as the position in the same transaction as it commits. Rolled
        back, the position included, if the block raises."""

    @abc.abstractmethod
    async def consumers(self) -> list[ConsumerRow]:
        """Every consumer, by name."""

    @abc.abstractmethod
    async def reset_consumer(self, name: str, cursor: str | None, now: datetime) -> bool:
        """Set the consumer's position to ``cursor`` and fence its holder (the next token,
        no holder); False when there is no such consumer."""

    @abc.abstractmethod
    async def drop_consumer(self, name: str) -> bool:
        """Delete the consumer's row; False when there was none."""


__all__ = [
    "ConsumerClaim",
    "ConsumerRow",
    "ConsumerStorage",
    "decide_claim",
    "decode_types",
    "describe_scope",
    "encode_types",
]
