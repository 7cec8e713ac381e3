"""Reading the whole log on PostgreSQL: `read_all` of 100,000 events against raw asyncpg.

- ours: ``log.read_all`` in pages of 1,000 (gap-safe: the transaction-id horizon, log
  order, each event decoded into its type);
- raw: asyncpg keyset pages of 1,000 of the same rows (every envelope column and the
  bytea data, by position, no horizon) and ``msgspec`` decoding of each event's bytes
  into a list per page (what a reader is handed, as ours hands a page).
"""

from __future__ import annotations

import time

import asyncpg
import msgspec

from benchmarks.common import PG_URL, Results, rounds, section, size
from benchmarks.datasets import dataset
from eventlog import CheckpointCreated, open_log

_PAGE = 1000
_DECODER = msgspec.json.Decoder(CheckpointCreated)


async def run(results: Results) -> None:
    sessions, per_session = size(1000, 20), size(100, 10)
    section(f"PostgreSQL read_all of {sessions * per_session:,} events")
    schema = await dataset("read", sessions, per_session)
    figures: dict[str, list[float]] = {"raw_read_decode": [], "read_all": []}
    raw = await asyncpg.connect(PG_URL)
    sql = ("SELECT position, event_id, tenant_id, stream_id, stream_version, recorded_at, "
           f'type, data, prev_hash, hash FROM "{schema}".events WHERE position > $1 '
           "ORDER BY position LIMIT $2")
    async with open_log(PG_URL, schema=schema) as log:
        await log.wait_readable()
        for _ in range(rounds()):
            started, count, after = time.perf_counter(), 0, 0
            while rows := await raw.fetch(sql, after, _PAGE):
                decoded = [_DECODER.decode(row[7]) for row in rows]
                count += len(decoded)
                after = rows[-1][0]
            figures["raw_read_decode"].append(count / (time.perf_counter() - started))
            started, count, cursor = time.perf_counter(), 0, None
            while (page := await log.read_all(after=cursor, limit=_PAGE)).events:
                count += len(page.events)
                cursor = page.cursor
            figures["read_all"].append(count / (time.perf_counter() - started))
    await raw.close()
    results.compare(f"read_all of {count:,} events", "read_all", "raw_read_decode", figures,
                    unit="events/s", goal="≥ 0.5", at_least=0.5)
