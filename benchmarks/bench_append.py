"""Append throughput on PostgreSQL: one event (~2 KB) per transaction, next to raw asyncpg.

Baselines, measured in the same run on the same server:
- raw asyncpg single-row autocommit INSERT of the same bytes (the one-connection ceiling);
- raw asyncpg with an explicit BEGIN … COMMIT (three round trips);
- SQLAlchemy Core inside ``engine.begin()``.
Caveats first: one connection, one client process, fsync on (the server's settings), the
client on the same 2-core machine as the server, so client CPU competes with the server.
"""

from __future__ import annotations

import asyncio
import logging
import os

import asyncpg
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import create_async_engine

from benchmarks.common import PG_URL, alternate, machine, report, scratch_schema
from eventlog import Event, open_log, register_event

PAYLOAD = "x" * 2000
COUNT = int(os.environ.get("BENCH_COUNT", "1000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


@register_event
class BenchEvent(Event, tag="bench.event"):
    """An event of about 2 KB."""

    text: str


async def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    print(f"append benchmark: {COUNT} calls × {ROUNDS} rounds · {machine()}")
    async with scratch_schema() as schema:
        raw = await asyncpg.connect(PG_URL)
        await raw.execute(f'CREATE SCHEMA "{schema}"')
        table = f'"{schema}".raw_events'
        await raw.execute(
            f"CREATE TABLE {table} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "tenant_id text NOT NULL, stream_id text NOT NULL, data bytea NOT NULL)"
        )
        payload = PAYLOAD.encode()
        insert = f"INSERT INTO {table} (tenant_id, stream_id, data) VALUES ($1, $2, $3)"
        engine = create_async_engine("postgresql+asyncpg://" + PG_URL.split("://", 1)[1])
        metadata = sa.MetaData(schema=schema)
        core_table = sa.Table(
            "raw_events", metadata, sa.Column("id", sa.BigInteger, primary_key=True),
            sa.Column("tenant_id", sa.Text), sa.Column("stream_id", sa.Text),
            sa.Column("data", sa.LargeBinary),
        )

        async def raw_autocommit(i: int) -> None:
            await raw.execute(insert, "t", f"s{i // 100}", payload)

        async def raw_begin_commit(i: int) -> None:
            async with raw.transaction():
                await raw.execute(insert, "t", f"s{i // 100}", payload)

        async def core_begin(i: int) -> None:
            async with engine.begin() as connection:
                await connection.execute(
                    core_table.insert().values(tenant_id="t", stream_id=f"s{i // 100}",
                                               data=payload)
                )

        async with open_log(PG_URL, schema=schema) as log:
            async def log_append(i: int) -> None:
                await log.append("t", f"s{i // 100}", [BenchEvent(text=PAYLOAD)])

            figures = await alternate(
                ROUNDS, COUNT,
                **{
                    "raw asyncpg autocommit INSERT": raw_autocommit,
                    "raw asyncpg BEGIN/INSERT/COMMIT": raw_begin_commit,
                    "SQLAlchemy Core engine.begin()": core_begin,
                    "EventLog.append (1 event, hash, view)": log_append,
                },
            )
            report("one event per transaction", "raw asyncpg autocommit INSERT", figures)
            report_verify = await log.verify()
            print(f"  (verify after the run: {report_verify.events} events, ok={report_verify.ok})")
        await engine.dispose()
        await raw.close()


if __name__ == "__main__":
    asyncio.run(main())
