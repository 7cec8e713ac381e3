"""The database administrator's forgery, made from outside the library (issue 40 §1): SQL on
the raw tables of a real SQLite file or the PostgreSQL server (Citus's coordinator too),
with the chain algorithm anyone can read (`eventlog.hashing`), and no key.

`forge` appends a correctly chained event to a stream and moves its stream-heads row, as
the attack did: `verify`'s chain and head checks alone pass it.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from eventlog import Event, default_registry
from eventlog.hashing import GENESIS_HASH, event_hash
from tests.conftest import BackendTarget


async def rows(target: BackendTarget, statement: str, *args: Any) -> list[tuple[Any, ...]]:
    """Run one statement on the store's database, bypassing the log; its rows."""
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        try:
            with connection:
                found = connection.execute(_qmarks(statement), args).fetchall()
        finally:
            connection.close()
        return [tuple(row) for row in found]
    connection = await asyncpg.connect(_server_url(target.url),
                                       server_settings={"search_path": target.schema})
    try:
        return [tuple(row) for row in await connection.fetch(statement, *args)]
    finally:
        await connection.close()


def _server_url(url: str) -> str:
    """The server's own URL: without the log's parameters (``distributed``, ``pool_mode``)."""
    parts = urlsplit(url)
    kept = [(key, value) for key, value in parse_qsl(parts.query)
            if key not in ("distributed", "pool_mode")]
    return urlunsplit(parts._replace(query=urlencode(kept)))


def _qmarks(statement: str) -> str:
    for number in range(12, 0, -1):
        statement = statement.replace(f"${number}", "?")
    return statement


async def forge(target: BackendTarget, tenant_id: str, stream_id: str, event: Event, *,
                signature: bytes | None = None) -> int:
    """Insert ``event`` as the next version of the stream, correctly chained onto its last
    stored event (the stream begins if it has none), with ``signature`` (None: unsigned),
    and move the stream's head row to it; its version."""
    tag, data = default_registry.encode(event)
    last = await rows(target, "SELECT stream_version, hash FROM events WHERE tenant_id = $1 "
                              "AND stream_id = $2 ORDER BY stream_version DESC LIMIT 1",
                      tenant_id, stream_id)
    version, prev = (int(last[0][0]), bytes(last[0][1])) if last else (0, GENESIS_HASH)
    event_id, at = uuid.uuid4(), datetime.now(UTC)
    digest = event_hash(tenant_id=tenant_id, stream_id=stream_id, version=version + 1,
                        event_id=event_id, type=tag, recorded_at=at, data=data,
                        prev_hash=prev)
    sqlite = target.name == "sqlite"
    await rows(target, "INSERT INTO events (tenant_id, stream_id, stream_version, event_id, "
                       "type, data, recorded_at, prev_hash, hash, signature) VALUES ($1, $2, "
                       "$3, $4, $5, $6, $7, $8, $9, $10)",
               tenant_id, stream_id, version + 1, event_id.hex if sqlite else event_id, tag,
               data, at.strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else at, prev, digest,
               signature)
    moved = await rows(target, "UPDATE stream_heads SET version = $1, head_hash = $2 WHERE "
                               "tenant_id = $3 AND stream_id = $4 RETURNING version",
                       version + 1, digest, tenant_id, stream_id)
    assert moved, "the forged event's stream has no head row to move"
    return version + 1


async def signature_of(target: BackendTarget, tenant_id: str, stream_id: str,
                       version: int) -> bytes | None:
    """The stored signature of one event, read with SQL."""
    found = await rows(target, "SELECT signature FROM events WHERE tenant_id = $1 AND "
                               "stream_id = $2 AND stream_version = $3",
                       tenant_id, stream_id, version)
    return None if found[0][0] is None else bytes(found[0][0])
