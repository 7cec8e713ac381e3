"""An export never writes a short file that looks whole (issue 21, item 2).

On PostgreSQL `read_all` returns an event only once every transaction older than its
writer has ended. While another session holds a transaction id open (an idle worker
mid-transaction), the events committed after it began are in the views but not readable
in log order: main's export waited 30 s, warned, then wrote 5 of 12 events with a valid
end record and exit 0. Export now takes every stream's head before reading, waits up to
``max_wait`` for the transactions running then, and fails (exit 3, no file, no end record)
if it read any stream short of that head.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from eventlog import open_log
from eventlog.cli import EXIT_OK, main
from eventlog.cli.errors import EXIT_OPERATIONAL
from eventlog.transfer import ExportIncomplete, export_log, import_log
from tests.conftest import PG_URL
from tests.events import Noted

pytestmark = pytest.mark.postgres

BEFORE, AFTER = 5, 7
"""Events committed before the other session's transaction began, and after."""


async def blocked_log(schema: str) -> tuple[asyncpg.Connection, asyncpg.transaction.Transaction]:
    """Write BEFORE events, open a transaction holding an id on another connection, then
    write AFTER more: the blocker and its transaction (the caller ends them)."""
    async with open_log(PG_URL, schema=schema) as log:
        for number in range(BEFORE):
            await log.append("t", f"s{number % 2}", [Noted(text=f"before {number}")])
        blocker = await asyncpg.connect(PG_URL)
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.fetchval("SELECT pg_current_xact_id()")  # holds a transaction id
        for number in range(AFTER):
            await log.append("t", f"s{number % 3}", [Noted(text=f"after {number}")])
    return blocker, transaction


@pytest.fixture
async def blocker(pg_schema: str) -> AsyncIterator[asyncpg.transaction.Transaction]:
    connection, transaction = await blocked_log(pg_schema)
    try:
        yield transaction
    finally:
        if connection.is_in_transaction():
            await transaction.rollback()
        await connection.close()


def lines(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


async def test_export_behind_an_open_transaction_raises_and_writes_no_end_record(
    pg_schema: str, blocker: asyncpg.transaction.Transaction,
) -> None:
    """The export reads 5 of 12 events: it raises `ExportIncomplete` naming the short
    streams, and what it wrote has no end record (an import refuses it as truncated).
    On main it returned a summary of 5 events and wrote a valid end record."""
    sink = io.BytesIO()
    async with open_log(PG_URL, schema=pg_schema) as log:
        with pytest.raises(ExportIncomplete) as raised:
            await export_log(log, sink, tenant_id="t", max_wait=0.3)
    short = raised.value
    assert (BEFORE + AFTER, {"s0", "s1", "s2"}) == (short.held, set(short.missing))
    assert "end" not in [record.get("kind") for record in lines(sink.getvalue())]


async def test_export_waits_for_the_open_transaction_within_max_wait(
    pg_schema: str, blocker: asyncpg.transaction.Transaction,
) -> None:
    """A transaction that ends within ``max_wait`` is waited for: the file is whole and
    its copy holds all 12 events and verifies."""
    sink = io.BytesIO()

    async def end_it() -> None:
        await asyncio.sleep(0.5)
        await blocker.rollback()

    async with open_log(PG_URL, schema=pg_schema) as log:
        ending = asyncio.create_task(end_it())
        summary = await export_log(log, sink, tenant_id="t", max_wait=30)
        await ending
    assert BEFORE + AFTER == summary.events
    sink.seek(0)
    async with open_log("memory://") as copy:
        imported = await import_log(copy, sink)
        assert (BEFORE + AFTER, True) == (imported.events_imported, (await copy.verify()).ok)


async def test_cli_export_behind_an_open_transaction_exits_3_and_leaves_no_file(
    pg_schema: str, blocker: asyncpg.transaction.Transaction, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``eventlog export --max-wait 0.3``: exit 3, a message saying how many events of how
    many were not readable and why, and no FILE (nor its temporary file) left behind.
    On main: a 30 s wait, a warning, then a 5-event file and exit 0."""
    target = tmp_path / "copy.jsonl"
    status = await asyncio.to_thread(main, [
        "export", "--tenant", "t", "--max-wait", "0.3", str(target),
        "--url", PG_URL, "--schema", pg_schema])
    err = " ".join(capsys.readouterr().err.split())
    left = await asyncio.to_thread(lambda: list(tmp_path.iterdir()))
    assert (EXIT_OPERATIONAL, []) == (status, left)
    # 7 of 12, or more if a transaction of another test on the shared server hides more.
    unread = re.search(r"stopped: (\d+) events of the 12 events it held were not readable", err)
    assert unread is not None, err
    assert int(unread.group(1)) >= AFTER


async def test_cli_export_waits_then_writes_the_whole_file(
    pg_schema: str, blocker: asyncpg.transaction.Transaction, tmp_path: Path,
) -> None:
    """With the blocking transaction ending after 0.5 s, ``--max-wait 30`` writes all
    12 events and exits 0."""
    target = tmp_path / "copy.jsonl"
    command = asyncio.create_task(asyncio.to_thread(main, [
        "export", "--tenant", "t", "--max-wait", "30", str(target),
        "--url", PG_URL, "--schema", pg_schema]))
    await asyncio.sleep(0.5)
    await blocker.rollback()
    status = await command
    records = lines(target.read_bytes())
    assert (EXIT_OK, {"kind": "end", "events": 12, "blobs": 0}) == (status, records[-1])
