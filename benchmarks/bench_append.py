"""Appends on PostgreSQL, one event (~2 KB) per call and 100 events per batch.

Baselines, measured in the same run on the same server:
- raw asyncpg single-row autocommit INSERT of the same bytes (the one-connection ceiling),
  and for information raw BEGIN … COMMIT (three round trips);
- raw asyncpg ``executemany`` of 100 rows of the same bytes (one pipelined, atomic call)
  for the batched append of 100 events over 20 streams.
Caveats first: one connection, one client process, fsync on (the server's settings), the
client on the same 2-core machine as the server, so client CPU competes with the server.
"""

from __future__ import annotations

import asyncpg

from benchmarks.common import PG_URL, Results, interleave, scratch_schema, section, size
from eventlog import NO_STREAM, Event, StreamAppend, open_log, register_event

PAYLOAD = "x" * 2000
BATCH = 100
STREAMS_PER_BATCH = 20


@register_event
class BenchEvent(Event, tag="bench.event"):
    """An event of about 2 KB."""

    text: str


async def raw_table(connection: asyncpg.Connection, schema: str) -> str:
    """A bare table for the raw baselines; its INSERT statement."""
    table = f'"{schema}".raw_events'
    await connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    await connection.execute(
        f"CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "tenant_id text NOT NULL, stream_id text NOT NULL, data bytea NOT NULL)"
    )
    return f"INSERT INTO {table} (tenant_id, stream_id, data) VALUES ($1, $2, $3)"


async def run(results: Results) -> None:
    count = size(1000, 20)
    section(f"PostgreSQL append: {count} calls per round")
    async with scratch_schema() as schema:
        raw = await asyncpg.connect(PG_URL)
        insert = await raw_table(raw, schema)
        payload = PAYLOAD.encode()

        async def raw_autocommit(i: int) -> None:
            await raw.execute(insert, "t", f"s{i // 100}", payload)

        async def raw_begin_commit(i: int) -> None:
            async with raw.transaction():
                await raw.execute(insert, "t", f"s{i // 100}", payload)

        async def raw_batch(i: int) -> None:
            await raw.executemany(insert, [("t", f"b{i}-{n % STREAMS_PER_BATCH}", payload)
                                           for n in range(BATCH)])

        async with open_log(PG_URL, schema=schema) as log:
            async def log_append(i: int) -> None:
                await log.append("t", f"s{i // 100}", [BenchEvent(text=PAYLOAD)])

            async def log_batch(i: int) -> None:
                per = BATCH // STREAMS_PER_BATCH
                await log.append_batch([
                    StreamAppend(tenant_id="t", stream_id=f"b{i}-{n}",
                                 events=[BenchEvent(text=PAYLOAD)] * per,
                                 expected_version=NO_STREAM)
                    for n in range(STREAMS_PER_BATCH)
                ])

            figures = await interleave(
                count, raw_autocommit=raw_autocommit, raw_begin_commit=raw_begin_commit,
                log_append=log_append,
            )
            results.compare("PostgreSQL append, 1 event (~2 KB)", "log_append",
                            "raw_autocommit", figures, goal="≥ 0.9", at_least=0.9)
            results.compare("(info) raw BEGIN/INSERT/COMMIT", "raw_begin_commit",
                            "raw_autocommit", figures)
            batches = await interleave(size(100, 3), raw_executemany=raw_batch,
                                       append_batch=log_batch)
            results.compare(f"PostgreSQL append_batch, {BATCH} events / "
                            f"{STREAMS_PER_BATCH} streams", "append_batch",
                            "raw_executemany", batches, unit="batches/s", goal="≥ 0.7",
                            at_least=0.7)
            report = await log.verify()
            print(f"  (verify after the run: {report.events} events, ok={report.ok})")
        await raw.close()
