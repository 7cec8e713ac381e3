"""Big values streamed to PostgreSQL through COPY, in pieces, instead of bound whole.

asyncpg binds a parameter by encoding it into its write buffer, then copies that buffer
into the Bind message, and the transport may buffer what the socket did not take: a
10 MiB state peaked at 2.6 times its size in the writing process (measured with
tracemalloc; LangGraph's psycopg saver: 1.0 on the heap, 2.0 resident). COPY FROM STDIN
takes an asynchronous iterable and sends it piece by piece, so an append whose statement
binds a bytes value of more than `STREAM_BYTES` stages those values first, in the same
transaction:

1. ``CREATE TEMP TABLE eventlog_staged (slot, data) ON COMMIT DROP`` (a temporary table
   writes no WAL and no other session sees it; created and dropped inside the
   transaction, it leaves no session state, so PgBouncer's transaction mode is fine);
2. ``COPY`` the values into it, `PIECE` bytes at a time (binary COPY format);
3. the append's own statement, each big parameter ``$n`` replaced by
   ``(SELECT data FROM pg_temp.eventlog_staged WHERE slot = $n::int)`` and bound as its
   slot number, so the server moves the bytes from the staged row into the blob row;
4. ``DROP TABLE`` (a second big append in the same held transaction creates it again).

Nothing is visible before the transaction commits, and a writer killed at any step
leaves nothing (the server rolls the transaction back). It costs four more round trips
and a second server-side write of the value (see `STREAM_BYTES`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

STREAM_BYTES = 4 * 1024 * 1024
"""A bytes parameter longer than this is streamed through COPY, not bound. Staging costs
throughput (the server writes the value twice: into the staged row, then into the blob
row; 10 MiB measured at about half the bound rate), so only a value whose bound copies
would cost tens of megabytes is staged; below it, 2.6 times 4 MiB is the most a bound
value adds."""
PIECE = 256 * 1024
"""Bytes of a staged value sent per COPY message."""

_TABLE = "eventlog_staged"
CREATE = f"CREATE TEMP TABLE {_TABLE} (slot int4 PRIMARY KEY, data bytea NOT NULL) ON COMMIT DROP"
DROP = f"DROP TABLE pg_temp.{_TABLE}"
_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags 0, no header extension
_TRAILER = b"\xff\xff"


@dataclass(frozen=True, slots=True)
class Streamed:
    """An append statement with its big values staged: the text and parameters to run
    once `stage` has copied ``staged`` (slot number, value) into the staged table."""

    sql: str
    params: list[Any]
    staged: list[tuple[int, bytes]]


def streamed(sql: str, params: Sequence[Any]) -> Streamed | None:
    """The statement rewritten to read its big bytes parameters from the staged table, or
    None when it binds none (it then runs as it is)."""
    big = [number for number, value in enumerate(params, start=1)
           if isinstance(value, bytes) and len(value) > STREAM_BYTES]
    if not big:
        return None
    staged = [(number, params[number - 1]) for number in big]
    wanted = set(big)

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in wanted:
            return match.group(0)
        return f"(SELECT data FROM pg_temp.{_TABLE} WHERE slot = ${number}::int4)"

    text = re.sub(r"\$(\d+)(?!\d)", replace, sql)
    values = [number if number in wanted else value
              for number, value in enumerate(params, start=1)]
    return Streamed(text, values, staged)


async def stage(driver: Any, staged: Sequence[tuple[int, bytes]]) -> None:
    """Create the staged table and COPY the values into it (inside the caller's
    transaction, on the asyncpg connection ``driver``)."""
    await driver.execute(CREATE)
    await driver.copy_to_table(_TABLE, source=_copy_data(staged), columns=["slot", "data"],
                               schema_name="pg_temp", format="binary")


async def _copy_data(staged: Sequence[tuple[int, bytes]]) -> AsyncIterator[bytes]:
    """The binary COPY stream of the rows (slot, value), each value in `PIECE` slices:
    only one slice is copied out of a value at a time."""
    yield _HEADER
    for slot, value in staged:
        yield (b"\x00\x02" + (4).to_bytes(4, "big") + slot.to_bytes(4, "big")
               + len(value).to_bytes(4, "big"))
        view = memoryview(value)
        for start in range(0, len(value), PIECE):
            yield bytes(view[start:start + PIECE])
    yield _TRAILER
