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

The database administrator can edit the row (issue 40 §5): move its cursor (events
skipped), set it past the end (delivery stops), take its token back (a fenced holder's
acks admitted again). So in a log with a writer key every row the application writes
carries the writer key's signature of its `row_digest` (`ConsumerSeal`), a claim refuses a
row whose signature does not hold (`ConsumerTampered`), and every later write of a holder
replaces only the row it wrote itself (its signature and cursor in the ``WHERE``), so an
edit made under a running holder is named at its next write. Without a writer key rows are not
signed and the administrator is trusted, as for events (docs/decisions/consumers.md).
"""

from __future__ import annotations

import abc
import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from eventlog.errors import ConsumerHeld, ConsumerScopeChanged, ConsumerTampered, InvalidInput
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
    signature: bytes | None = None
    """The writer key's signature of its `row_digest` (key id first, as an event's), or
    None where the log has no writer key."""
    damage: str | None = None
    """Why the stored row could not be read as written (a token that is no number, types
    that are no list, ...), the other fields then being placeholders; None when it could."""

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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime | None) -> int | None:
    """Microseconds since the epoch, exactly (what the database keeps of a time)."""
    if moment is None:
        return None
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
    return (aware - _EPOCH) // timedelta(microseconds=1)


def row_digest(row: ConsumerRow) -> bytes:
    """The SHA-256 the writer key signs for a consumer's row: of its name, scope, cursor,
    token, holder, lease and update time (every column but the signature)."""
    fields = [row.name, row.tenant_id, None if row.types is None else list(row.types),
              row.cursor, row.token, row.holder, _micros(row.lease_until),
              _micros(row.updated_at)]
    return hashlib.sha256(msgspec.json.encode(fields)).digest()


def damaged_row(name: Any, damage: str) -> ConsumerRow:
    """A placeholder for a stored row that could not be read as written: listed with its
    damage, refused by a claim, replaced by a reset."""
    return ConsumerRow(name=str(name), tenant_id=None, types=None, cursor=None, token=0,
                       holder=None, lease_until=None, updated_at=_EPOCH, damage=damage[:300])


class ConsumerSeal:
    """How a log signs and checks its consumers' rows: ``sign`` is the writer key's
    (`eventlog.writer_keys.EventSigner.sign_consumer_row`), ``check`` the writer public
    keys' (`eventlog.writer_keys.WriterKeys.check_consumer_row`). With no ``check`` (a log
    without a writer key) rows are trusted as stored and none is signed; with ``check``
    and no ``sign`` (public keys only) rows are checked and none can be written."""

    def __init__(self, sign: Callable[[bytes], bytes] | None = None,
                 check: Callable[[bytes, bytes], str | None] | None = None) -> None:
        self._sign = sign
        self._check = check

    @property
    def checks(self) -> bool:
        """Whether rows must carry a writer signature."""
        return self._check is not None

    def signed(self, row: ConsumerRow) -> ConsumerRow:
        """``row`` with its signature (None when the log signs nothing)."""
        if self._sign is None:
            if self._check is not None:
                raise InvalidInput("keyring", "holds no writer key: this log's consumer rows "
                                              "are signed, and a log opened with writer "
                                              "public keys only can check them, not write "
                                              "them")
            return msgspec.structs.replace(row, signature=None, damage=None)
        return msgspec.structs.replace(row, signature=self._sign(row_digest(row)),
                                       damage=None)

    def problem(self, row: ConsumerRow) -> tuple[str, str] | None:
        """Why ``row`` is not one the application wrote, as (reason, detail), or None."""
        if row.damage is not None:
            return "unreadable", row.damage
        if self._check is None:
            return None
        if row.signature is None:
            return "unsigned", ("it carries no writer signature, and this log's consumer rows "
                                "are signed")
        why = self._check(row_digest(row), row.signature)
        return None if why is None else ("forged", why)

    def refuse(self, row: ConsumerRow) -> None:
        """Raise `ConsumerTampered` unless ``row`` is one the application wrote."""
        found = self.problem(row)
        if found is not None:
            raise ConsumerTampered(row.name, *found)


TRUSTING = ConsumerSeal()
"""The seal of a log without a writer key: nothing signed, every readable row trusted."""


def decide_claim(existing: ConsumerRow | None, claim: ConsumerClaim,
                 seal: ConsumerSeal = TRUSTING) -> ConsumerRow:
    """The row a claim leaves (not yet signed): a new consumer at ``claim.start``, or the
    existing one with the claimant as holder under the next token. Raises
    `ConsumerTampered` for an existing row the application did not write (``seal``),
    `ConsumerHeld` while another holder's lease runs (or the same holder name's: a second
    opener in one process is a second holder), `ConsumerScopeChanged` when the scope
    differs from the stored one."""
    if existing is None:
        return ConsumerRow(
            name=claim.name, tenant_id=claim.tenant_id, types=claim.types, cursor=claim.start,
            token=1, holder=claim.holder, lease_until=claim.lease_until, updated_at=claim.now)
    seal.refuse(existing)
    if (existing.tenant_id, existing.types) != (claim.tenant_id, claim.types):
        raise ConsumerScopeChanged(claim.name, existing.scope,
                                   describe_scope(claim.tenant_id, claim.types))
    if (existing.holder is not None and existing.lease_until is not None
            and existing.lease_until > claim.now):
        raise ConsumerHeld(claim.name, existing.holder, existing.lease_until.isoformat())
    return msgspec.structs.replace(existing, token=existing.token + 1, holder=claim.holder,
                                   lease_until=claim.lease_until, updated_at=claim.now,
                                   signature=None)


def decide_reset(existing: ConsumerRow, cursor: str | None, now: datetime) -> ConsumerRow:
    """The row a reset leaves (not yet signed): the position at ``cursor``, no holder, the
    next token. A reset is the operator's repair: it takes whatever the row holds (a
    tampered row included: its scope as read). A row not readable as written is refused
    (`ConsumerTampered`, ``unreadable``): its scope cannot be told, so it is dropped and
    made again instead."""
    if existing.damage is not None:
        raise ConsumerTampered(existing.name, "unreadable",
                               existing.damage + " (a reset cannot tell its scope: drop it)")
    return msgspec.structs.replace(existing, cursor=cursor, token=existing.token + 1,
                                   holder=None, lease_until=None, updated_at=now,
                                   signature=None, damage=None)


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
    async def claim_consumer(self, claim: ConsumerClaim, seal: ConsumerSeal) -> ConsumerRow:
        """In ONE transaction, read the consumer's row, decide with `decide_claim` (under
        ``seal``), sign what it returns (`ConsumerSeal.signed`) and store it: the row, now
        held by the claimant. Two concurrent claims never both succeed while either's
        lease runs. Its errors pass through."""

    @abc.abstractmethod
    async def write_consumer(self, row: ConsumerRow, previous: ConsumerRow) -> bool:
        """Store ``row``'s position, holder, lease, update time and signature (an ack, a
        renewal, a release) if its token is still the consumer's and, when ``previous``
        (the row as this holder wrote it last) is signed, the stored row still has its
        signature and cursor; False, changing nothing, otherwise."""

    @abc.abstractmethod
    def consumer_transaction(
        self, row: ConsumerRow, previous: ConsumerRow
    ) -> AbstractAsyncContextManager[Any]:
        """A write transaction for a projection: it first writes ``row`` as
        `write_consumer` does, locking the row (else raises `ConsumerFenced`, having
        written nothing), yields the connection the caller writes its own tables on
        (asyncpg's on PostgreSQL, SQLAlchemy's ``AsyncConnection`` on SQLite, None in
        memory), and commits the position with them. Rolled back, the position included,
        if the block raises."""

    @abc.abstractmethod
    async def consumer(self, name: str) -> ConsumerRow | None:
        """The consumer's row as stored (`ConsumerRow.damage` when it is not readable as
        written), or None."""

    @abc.abstractmethod
    async def consumers(self) -> list[ConsumerRow]:
        """Every consumer, by name; one whose row is not readable as written is listed
        with its `ConsumerRow.damage` (never failing the listing)."""

    @abc.abstractmethod
    async def reset_consumer(self, name: str, cursor: str | None, now: datetime,
                             seal: ConsumerSeal) -> bool:
        """In ONE transaction, read the row (whatever it holds), and store `decide_reset`'s
        row signed under ``seal``: the position at ``cursor``, its holder fenced; False
        when there is no such consumer."""

    @abc.abstractmethod
    async def drop_consumer(self, name: str) -> bool:
        """Delete the consumer's row; False when there was none."""


__all__ = [
    "TRUSTING",
    "ConsumerClaim",
    "ConsumerRow",
    "ConsumerSeal",
    "ConsumerStorage",
    "damaged_row",
    "decide_claim",
    "decide_reset",
    "decode_types",
    "describe_scope",
    "encode_types",
    "row_digest",
]
