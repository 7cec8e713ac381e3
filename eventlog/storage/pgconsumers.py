"""`ConsumerStorage` on PostgreSQL (raw asyncpg), and the pushed wake-ups subscribers
listen for.

Reads follow the log exactly as `read_all` does (its statement, its horizon, its
``x:<transaction id>:<position>`` cursors), each event with the cursor just after it. A
claim locks the consumer's row (``FOR UPDATE``; a first claim's insert meets a racing one
at the primary key) around `decide_claim`; every later write names the holder's token (and
the signature of the row it wrote last, in a log with a writer key).

Wake-ups: every insert into ``events`` fires a statement trigger (migrations 0014 and
0016) that calls ``pg_notify`` on the log's channel inside the append's transaction, so
the notification leaves when, and only if, the append commits; and only while some
session holds the log's listening lock (`LISTENING_LOCK`, shared), so appends nobody
listens for skip NOTIFY's queue lock. A subscriber LISTENs on a dedicated connection of
its own (never a pooled one: a pooled connection would carry the LISTEN to whoever
borrows it next), then takes the listening lock on it, held while it waits: woken, it
gives the lock up until it has read all there is (`Listener.disarm`, `Listener.arm`).
Behind a transaction pooler (``pool_mode=transaction``) a session outlives no
transaction, so no LISTEN is attempted and subscribers poll; a lost listening connection
also falls back to polling until it is connected again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from eventlog import cursors
from eventlog._logging import get_logger
from eventlog.errors import ConsumerFenced, EventLogError
from eventlog.records import ENVELOPE_SIZE, StoredEvent
from eventlog.storage.contracts.consumers import (
    ConsumerClaim,
    ConsumerRow,
    ConsumerSeal,
    ConsumerStorage,
    decide_claim,
    decide_reset,
)
from eventlog.storage.sqlconsumers import COLUMNS, consumer_row, row_values, written_values
from eventlog.storage.sqltext import quote

logger = get_logger(__name__)
LISTENING_LOCK = "hashtext('eventlog.listening'), hashtext($1)"
"""The advisory lock key of a channel's listeners, as the trigger of migration 0016 names
it: each listener holds it shared, an append tries it exclusive to learn that nobody
listens."""
_TAKE_LISTENING = f"SELECT pg_try_advisory_lock_shared({LISTENING_LOCK})"
_GIVE_UP_LISTENING = f"SELECT pg_advisory_unlock_shared({LISTENING_LOCK})"
_WRITER = "pid::text || ':' || backend_xid::text"
_WRITING_NOW = (f"SELECT array_agg({_WRITER}) FROM pg_stat_activity WHERE backend_xid IS NOT "
                "NULL AND datname = current_database() AND pid <> pg_backend_pid()")
_STILL_WRITING = f"SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE {_WRITER} = ANY($1))"
_LOCK_TRIES = 200
_SELECT = ", ".join(COLUMNS)
_PLACES = ", ".join(f"${n}" for n in range(1, len(COLUMNS) + 1))
_WRITTEN = ", ".join(f"{column} = ${n}" for n, column in enumerate(
    ("cursor", "holder", "lease_until", "updated_at", "signature"), start=3))
"""What a holder's write sets ($1 the name, $2 the token; $8 and $9 the signature and
cursor of the row it wrote last)."""


def channel_name(schema: str | None) -> str:
    """The log's notification channel, as the trigger of migration 0014 names it:
    ``eventlog.<schema>``, or ``eventlog.<md5 of the schema>`` when that is over 63 bytes."""
    schema = schema or "public"
    if len(schema.encode()) <= 54:
        return f"eventlog.{schema}"
    return "eventlog." + hashlib.md5(schema.encode()).hexdigest()


class Listener:
    """A LISTEN on the log's channel over a connection of its own, holding the channel's
    listening lock (so appends notify) while ``armed``; ``wake`` is called on each
    notification. ``listening`` is False until connected, and again once the connection
    is lost (the subscriber then polls, and `reconnect` tries again).

    A subscriber woken to read needs no notification until it waits again, and each one
    costs every append that sends it (NOTIFY's queue lock, the listening backend's
    wake-up: ~70 µs a commit here), so it gives the lock up while it reads (`disarm`) and
    takes it again before it sleeps (`arm`).

    An append's trigger asks for the lock when its statement runs; the notification
    leaves at its commit. So an append that asked before the lock was taken, and commits
    after, notifies nobody: taking the lock (`reconnect`, `arm`) therefore waits until
    every transaction that had begun writing by then has ended (`_settle`), and the
    caller's next read finds its events."""

    def __init__(self, dsn: str, channel: str, wake: Callable[[], None]) -> None:
        self._dsn = dsn
        self._channel = channel
        self._wake = wake
        self._connection: Any = None
        self.listening = False
        self.armed = False
        """Whether this connection holds the listening lock (appends notify it)."""
        self._unsettled: list[str] = []  # the writers `_settle` stopped waiting for

    @property
    def settled(self) -> bool:
        """Whether the last taking of the lock saw every writer begun before it end
        (`_settle` within its time); if not, one of them may commit unheard, and
        `settle_again` waits for the rest of them."""
        return not self._unsettled

    async def reconnect(self, seconds: float) -> bool:
        """Connect, LISTEN and take the lock unless already listening, then `_settle` (up
        to ``seconds``); whether it listens now."""
        if self.listening:
            return True
        await self.close()
        try:
            self._connection = await asyncpg.connect(self._dsn, statement_cache_size=0)
            self._connection.add_termination_listener(self._lost)
            await self._connection.add_listener(self._channel, self._notified)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            logger.info("listen_failed", channel=self._channel, error=str(error)[:200])
            await self.close()
            return False
        # After the LISTEN: an append that finds the lock held notifies a listener.
        if not await self._lock_and_settle(seconds, "listen_failed"):
            return False
        self.listening = self.armed = True
        self._wake()  # anything appended before the LISTEN began is read now
        return True

    async def arm(self, seconds: float) -> bool:
        """Take the listening lock again if `disarm` gave it up, then `_settle` (up to
        ``seconds``); whether it was taken now (the caller reads again before it sleeps).
        A listener that cannot take it closes and falls back to polling."""
        if not self.listening or self.armed:
            return False
        if not await self._lock_and_settle(seconds, "listen_lost"):
            return False
        self.armed = True
        return True

    async def disarm(self) -> None:
        """Give the listening lock up, keeping the LISTEN: appends notify nobody on this
        connection's account until `arm`."""
        if not self.listening or not self.armed:
            return
        try:
            await self._connection.fetchval(_GIVE_UP_LISTENING, self._channel)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            logger.info("listen_lost", channel=self._channel, error=str(error)[:200])
            await self.close()
            return
        self.armed = False

    async def _lock_and_settle(self, seconds: float, failure: str) -> bool:
        """Take the listening lock, then `_settle`; whether it was taken. A listener that
        cannot take it (or loses its connection) is closed, logged as ``failure``."""
        try:
            locked = await self._take_listening_lock()
            if locked:
                self._unsettled = await self._writing_now()
                await self._settle(seconds)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            logger.info(failure, channel=self._channel, error=str(error)[:200])
            locked = False
        if not locked:
            await self.close()
        return locked

    async def _writing_now(self) -> list[str]:
        """The transactions of this database writing now (by backend and id)."""
        return list(await self._connection.fetchval(_WRITING_NOW) or ())

    async def _settle(self, seconds: float) -> bool:
        """Wait, up to ``seconds``, until every transaction in `_unsettled` (those of
        this database that had begun writing when the lock was taken) has ended; whether
        they all did (if not, the follower waits for them again before it sleeps:
        `settle_again`, `eventlog.log._waiting.Waiter.behind`). The read horizon's
        snapshot alone would not do: a transaction holding the newest transaction id,
        with none newer ended, is running yet above the snapshot's xmax. So the writers
        are named by backend and id (``pg_stat_activity``), which costs no transaction
        id of our own."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self._unsettled and await self._connection.fetchval(_STILL_WRITING,
                                                                 self._unsettled):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.005)
        self._unsettled = []
        return True

    async def settle_again(self, seconds: float) -> bool:
        """Wait, up to ``seconds``, for the writers the last `_settle` gave up on;
        whether they have all ended (a lost connection ends the listener: polling
        covers the rest)."""
        if self.settled or self._connection is None:
            return True
        try:
            return await self._settle(seconds)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            logger.info("listen_lost", channel=self._channel, error=str(error)[:200])
            await self.close()
            return True

    async def _take_listening_lock(self) -> bool:
        # An append holds the lock exclusively for an instant while it asks: try again.
        for _ in range(_LOCK_TRIES):
            if await self._connection.fetchval(_TAKE_LISTENING, self._channel):
                return True
            await asyncio.sleep(0.005)
        logger.info("listen_failed", channel=self._channel, error="listening lock not taken")
        return False

    def _notified(self, *_: Any) -> None:
        self._wake()

    def _lost(self, *_: Any) -> None:
        self.listening = self.armed = False
        logger.info("listen_lost", channel=self._channel)
        self._wake()

    async def close(self) -> None:
        """Close the listening connection (if any)."""
        self.listening = self.armed = False
        self._unsettled = []  # polling and the next listen cover them
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.remove_termination_listener(self._lost)
        if connection is not None and not connection.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.close(), 5)


class PostgresConsumers(ConsumerStorage):
    """`ConsumerStorage` over asyncpg, with the log's LISTEN channel."""

    if TYPE_CHECKING:
        qualified: dict[str, str]
        schema: str | None
        transaction_pooling: bool
        read_horizon: str
        _dsn: str | None
        read_floor: int

        def driver_connection(self) -> AbstractAsyncContextManager[Any]: ...
        async def _fetch(self, operation: str, sql: str, params: list[Any]) -> list[Any]: ...
        def translate(self, error: BaseException, operation: str) -> BaseException: ...
        async def read_rows(self, after: str | None, limit: int,
                            tenant_id: str | None) -> list[Any]: ...

    @property
    def _consumer_table(self) -> str:
        prefix = f"{quote(self.schema)}." if self.schema else ""
        return prefix + quote("consumers")

    async def read_with_cursors(
        self, after: str | None, limit: int, tenant_id: str | None
    ) -> list[tuple[StoredEvent, str]]:
        rows = await self.read_rows(after, limit, tenant_id)
        return [(StoredEvent(*row[:ENVELOPE_SIZE]),
                 cursors.encode_xid(int(row[ENVELOPE_SIZE]), int(row[0]))) for row in rows]

    async def end_cursor(self) -> str | None:
        # Every transaction below the horizon has ended: the events they wrote are all
        # before (horizon, 0), and every event readable later comes after it.
        rows = await self._fetch("read", f"SELECT GREATEST({self.read_horizon}, "
                                         "$1::text::xid8)::text", [str(self.read_floor)])
        return cursors.encode_xid(int(rows[0][0]), 0)

    def listener(self, wake: Callable[[], None]) -> Listener | None:
        """A `Listener` for the log's channel, or None where LISTEN cannot work (behind a
        transaction pooler) or no URL is known (a log over an application's engine)."""
        if self.transaction_pooling or self._dsn is None:
            return None
        return Listener(self._dsn, channel_name(self.schema), wake)

    async def claim_consumer(self, claim: ConsumerClaim, seal: ConsumerSeal) -> ConsumerRow:
        table = self._consumer_table
        try:
            async with self.driver_connection() as driver, driver.transaction():
                found = await driver.fetchrow(
                    f"SELECT {_SELECT} FROM {table} WHERE name = $1 FOR UPDATE", claim.name)
                existing = None if found is None else consumer_row(found)
                row = seal.signed(decide_claim(existing, claim, seal))
                values = list(row_values(row).values())
                if existing is None:
                    # A racing first claim's insert makes this one wait, then fail on the
                    # primary key: reported as held (below), its lease being new.
                    await driver.execute(
                        f"INSERT INTO {table} ({_SELECT}) VALUES ({_PLACES})", *values)
                else:
                    await driver.execute(
                        f"UPDATE {table} SET token = $2, holder = $3, lease_until = $4, "
                        "updated_at = $5, signature = $6 WHERE name = $1",
                        row.name, row.token, row.holder, row.lease_until, row.updated_at,
                        row.signature)
        except EventLogError:
            raise
        except asyncpg.UniqueViolationError:
            return await self.claim_consumer(claim, seal)  # now the row exists: decide again
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return row

    def _write_sql(self, previous: ConsumerRow) -> str:
        fence = "" if previous.signature is None else (
            " AND signature = $8 AND cursor IS NOT DISTINCT FROM $9")
        return (f"UPDATE {self._consumer_table} SET {_WRITTEN} WHERE name = $1 "
                f"AND token = $2{fence}")

    @staticmethod
    def _write_args(row: ConsumerRow, previous: ConsumerRow) -> list[Any]:
        args = [row.name, row.token, *written_values(row).values()]
        if previous.signature is None:
            return args
        return [*args, previous.signature, previous.cursor]

    async def write_consumer(self, row: ConsumerRow, previous: ConsumerRow) -> bool:
        try:
            async with self.driver_connection() as driver:
                status: str = await driver.execute(self._write_sql(previous),
                                                   *self._write_args(row, previous))
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return status.endswith(" 1")

    @asynccontextmanager
    async def consumer_transaction(
        self, row: ConsumerRow, previous: ConsumerRow
    ) -> AsyncIterator[Any]:
        async with self.driver_connection() as driver, driver.transaction():
            # The row stays locked until the commit: no claim or reset moves the token
            # between the handler's writes and the position.
            status = await driver.execute(self._write_sql(previous),
                                          *self._write_args(row, previous))
            if not status.endswith(" 1"):
                raise ConsumerFenced(row.name, row.token)
            yield driver

    async def consumer(self, name: str) -> ConsumerRow | None:
        rows = await self._fetch(
            "read", f"SELECT {_SELECT} FROM {self._consumer_table} WHERE name = $1", [name])
        return consumer_row(rows[0]) if rows else None

    async def consumers(self) -> list[ConsumerRow]:
        rows = await self._fetch(
            "read", f"SELECT {_SELECT} FROM {self._consumer_table} ORDER BY name", [])
        return [consumer_row(row) for row in rows]

    async def reset_consumer(self, name: str, cursor: str | None, now: datetime,
                             seal: ConsumerSeal) -> bool:
        table = self._consumer_table
        try:
            async with self.driver_connection() as driver, driver.transaction():
                found = await driver.fetchrow(
                    f"SELECT {_SELECT} FROM {table} WHERE name = $1 FOR UPDATE", name)
                if found is None:
                    return False
                row = seal.signed(decide_reset(consumer_row(found), cursor, now))
                await driver.execute(
                    f"UPDATE {table} SET cursor = $2, token = $3, holder = NULL, "
                    "lease_until = NULL, updated_at = $4, signature = $5 WHERE name = $1",
                    name, row.cursor, row.token, row.updated_at, row.signature)
        except EventLogError:
            raise
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return True

    async def drop_consumer(self, name: str) -> bool:
        try:
            async with self.driver_connection() as driver:
                status: str = await driver.execute(
                    f"DELETE FROM {self._consumer_table} WHERE name = $1", name)
        except Exception as error:
            raise self.translate(error, "consumer") from error
        return status.endswith(" 1")
