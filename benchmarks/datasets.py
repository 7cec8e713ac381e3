"""Large logs for the read, verify and growth benchmarks: loaded once, kept between runs.

Each dataset is a PostgreSQL schema ``bench_keep_<name>`` holding a log of checkpoint
sessions (``sessions`` x ``per_session`` checkpoints, ~200-byte states). It is loaded with
the batched append (`EventLog.append_batch`, 1,000 events per transaction) and remembers
its parameters; a later run reuses it when they match and drops and reloads it when they
do not. Benchmarks that write into a kept dataset use sessions of their own, so each run
adds a few hundred events to it (under 0.5 % of the smallest).
"""

from __future__ import annotations

import time
import uuid

import asyncpg

from benchmarks.common import PG_URL, quick
from eventlog import CheckpointCreated, StreamAppend, content_digest, open_log

_BATCH_SESSIONS = 100
_BATCH_STEPS = 10
_VERSION = 1  # bump when the loader changes what it writes


def state(session: int, step: int) -> bytes:
    """A ~200-byte state, distinct per checkpoint."""
    return f"session {session} step {step} ".encode().ljust(200, b".")


def run_of(session: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"bench-session-{session}")


async def dataset(name: str, sessions: int, per_session: int) -> str:
    """The schema of a kept dataset with these parameters, loading it if needed."""
    schema = f"bench_keep_{name}" + ("_quick" if quick() else "")
    params = f"v{_VERSION} sessions={sessions} per_session={per_session}"
    connection = await asyncpg.connect(PG_URL)
    try:
        kept = await connection.fetchrow(
            f'SELECT params, load_seconds FROM "{schema}".bench_params'
        ) if await _has_params(connection, schema) else None
        if kept is not None and kept["params"] == params:
            print(f"  dataset {name}: kept ({params}; loaded in "
                  f"{kept['load_seconds']:.1f} s by an earlier run)")
            async with open_log(PG_URL, schema=schema):
                pass  # brings a kept schema up to this code's revision
            return schema
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()
    seconds = await _load(schema, sessions, per_session)
    print(f"  dataset {name}: loaded {sessions * per_session:,} events in {seconds:.1f} s "
          f"({sessions * per_session / seconds:,.0f} events/s with append_batch)")
    connection = await asyncpg.connect(PG_URL)
    await connection.execute(f'CREATE TABLE "{schema}".bench_params '
                             "(params text, load_seconds float8)")
    await connection.execute(f'INSERT INTO "{schema}".bench_params VALUES ($1, $2)',
                             params, seconds)
    await connection.close()
    return schema


async def _has_params(connection: asyncpg.Connection, schema: str) -> bool:
    return bool(await connection.fetchval(
        "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1 "
        "AND tablename = 'bench_params'", schema))


async def _load(schema: str, sessions: int, per_session: int) -> float:
    started = time.perf_counter()
    async with open_log(PG_URL, schema=schema) as log:
        for first in range(0, sessions, _BATCH_SESSIONS):
            chunk = range(first, min(first + _BATCH_SESSIONS, sessions))
            for step0 in range(0, per_session, _BATCH_STEPS):
                steps = range(step0, min(step0 + _BATCH_STEPS, per_session))
                await log.append_batch([_part(session, steps) for session in chunk])
    return time.perf_counter() - started


def _part(session: int, steps: range) -> StreamAppend:
    states = [state(session, step) for step in steps]
    return StreamAppend(
        tenant_id="t", stream_id=f"session:s{session}",
        events=[
            CheckpointCreated(
                session_id=f"s{session}", run_id=run_of(session), checkpoint_id=f"c{step}",
                step=step, state_digest=content_digest(data).hex(), state_encoding="bytes",
                state_size=len(data),
            )
            for step, data in zip(steps, states, strict=True)
        ],
        attach=states,
    )
