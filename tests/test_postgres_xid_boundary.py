"""PostgreSQL: the log order holds across a power-of-ten boundary of transaction ids.

`read_all` orders by (writer transaction id, position). The transaction id travels to the
client as text, and a query that sorted by that text ('100000' < '29169') instead of the
number once skipped every event written under a shorter id. These tests rewrite the
`tx_id` column of a scratch schema so that its events straddle a power of ten (all below
the current snapshot's xmin, so every one is readable), then check `read_all` and every
whole-log consumer: export, rebuild, view comparison, `eventlog log`, and verify.
"""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog, RecordedEvent, cursors, open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import main
from eventlog.storage.postgres import READ_HORIZON, PostgresBackend
from eventlog.transfer import export_log
from projections import compare_views, rebuild
from tests.conftest import PG_URL, drop_schema, require_postgres
from tests.events import Noted
from tests.procs.settle import settle

pytestmark = pytest.mark.postgres

EVENTS_PER_SIDE = 12
"""Events written below the boundary; as many again are written at or above it."""
PAGE_SIZES = (*range(1, 2 * EVENTS_PER_SIDE + 2), 1000)


async def burn_transaction_ids(connection: asyncpg.Connection, at_least: int) -> int:
    """Spend transaction ids until the current one is past ``at_least``; the current one."""
    current = int(await connection.fetchval("SELECT pg_current_xact_id()::text"))
    while current <= at_least:
        current = int(await connection.fetchval("SELECT pg_current_xact_id()::text"))
    return current


async def straddle_boundary(schema: str) -> tuple[int, list[int]]:
    """Rewrite the schema's events' transaction ids (in position order, rising) so half lie
    just below a power of ten and half at or above it, all older than any running
    transaction. Returns the boundary and the new ids in position order."""
    connection = await asyncpg.connect(PG_URL)
    try:
        await burn_transaction_ids(connection, 1_200)
        xmin = int(await connection.fetchval(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text"))
        boundary = 10 ** (len(str(xmin - 3 * EVENTS_PER_SIDE)) - 1)
        positions = [row[0] for row in await connection.fetch(
            f'SELECT position FROM "{schema}".events ORDER BY position')]
        # Two events share each transaction id, as the events of one append do.
        first = boundary - EVENTS_PER_SIDE // 2
        tx_ids = [first + index // 2 for index in range(len(positions))]
        assert tx_ids[0] < boundary <= tx_ids[-1] < xmin
        await connection.executemany(
            f'UPDATE "{schema}".events SET tx_id = $1::text::xid8 WHERE position = $2',
            [(str(tx), position) for tx, position in zip(tx_ids, positions, strict=True)],
        )
        return boundary, tx_ids
    finally:
        await connection.close()


@pytest.fixture
async def straddling(pg_schema: str) -> AsyncIterator[tuple[EventLog, list[RecordedEvent]]]:
    """A log whose events straddle a power-of-ten transaction id, and those events as a
    correct reader returns them (position order, since the ids rise with position)."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        run_id = uuid.uuid4()
        for step in range(EVENTS_PER_SIDE):
            tenant = "acme" if step % 3 else "globex"
            await log.checkpoints.create(CheckpointRecord(
                tenant_id=tenant, session_id=f"s{step % 2}", run_id=run_id, step=step,
                state={"step": step}))
            await log.append(tenant, f"notes-{step % 4}", [Noted(text=str(step))])
        await settle(log)
        expected = await read_pages(log, 1000)
        assert 2 * EVENTS_PER_SIDE == len(expected)
    await straddle_boundary(pg_schema)
    async with open_log(PG_URL, schema=pg_schema) as log:
        yield log, expected


async def read_pages(log: EventLog, limit: int, tenant_id: str | None = None
                     ) -> list[RecordedEvent]:
    """Follow read_all from the start to an empty page."""
    events: list[RecordedEvent] = []
    cursor: str | None = None
    while True:
        page = await log.read_all(after=cursor, limit=limit, tenant_id=tenant_id)
        if not page.events:
            return events
        events.extend(page.events)
        cursor = page.cursor


def ids(events: list[RecordedEvent]) -> list[uuid.UUID]:
    return [event.event_id for event in events]


async def test_read_all_every_page_size_crosses_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """Every page size returns every event exactly once, in (transaction, position) order."""
    log, expected = straddling
    for limit in PAGE_SIZES:
        assert ids(expected) == ids(await read_pages(log, limit)), f"limit={limit}"


async def test_read_all_per_tenant_crosses_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """A tenant's pages hold every event of that tenant exactly once, in log order."""
    log, expected = straddling
    for tenant in ("acme", "globex"):
        mine = [event for event in expected if event.tenant_id == tenant]
        for limit in PAGE_SIZES:
            assert ids(mine) == ids(await read_pages(log, limit, tenant)), (tenant, limit)


async def test_first_page_starts_below_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """The first page begins with the first event written, not the first above 10^k."""
    log, expected = straddling
    page = await log.read_all(after=None, limit=1)
    assert [expected[0].event_id] == ids(page.events)
    assert page.cursor is not None
    assert page.cursor.startswith("x:")


async def test_rebuild_and_view_comparison_cross_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """A rebuild folds every event: the stored views equal it, checkpoint for checkpoint."""
    log, _ = straddling
    assert [] == await compare_views(log)
    tables = await rebuild(log)
    assert EVENTS_PER_SIDE == len(tables.snapshot()["checkpoints"])


async def test_export_crosses_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """An export carries every event of the tenant, in log order."""
    log, expected = straddling
    sink = io.BytesIO()
    summary = await export_log(log, sink, tenant_id="acme")
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    exported = [line["id"] for line in lines if line.get("kind") == "event"]
    mine = [str(event.event_id) for event in expected if event.tenant_id == "acme"]
    assert mine == exported
    assert len(mine) == summary.events


async def test_verify_reads_every_event_across_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]],
) -> None:
    """verify's scan reads as many events as the storage holds, and finds nothing wrong."""
    log, expected = straddling
    report = await log.verify()
    assert (len(expected), []) == (report.events, report.problems)


def test_log_command_and_follow_cross_the_boundary(
    straddling: tuple[EventLog, list[RecordedEvent]], pg_schema: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`eventlog log --json` and `--follow` print every event once, in log order."""
    _, expected = straddling
    for extra in ([], ["--follow", "--from-start", "--poll-interval", "0.01", "--max-wait", "0.2"]):
        capsys.readouterr()
        status = main(["log", "--json", *extra, "--url", PG_URL, "--schema", pg_schema])
        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert 0 == status
        assert [str(event_id) for event_id in ids(expected)] == [
            line["event_id"] for line in printed], extra


# -- the read query's order at any width ------------------------------------------------


@pytest.fixture(scope="module")
def scratch_schema() -> Iterator[str]:
    """One schema with the log's tables, emptied by each example that uses it."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        async with open_log(PG_URL, schema=schema):
            pass

    asyncio.run(create())
    yield schema
    asyncio.run(drop_schema(schema))


ANY_WIDTH = st.integers(min_value=1, max_value=2**63)


@given(tx_ids=st.lists(ANY_WIDTH, min_size=1, max_size=12),
       limit=st.integers(min_value=1, max_value=13))
async def test_read_query_pages_in_numeric_order_at_any_width(
    scratch_schema: str, tx_ids: list[int], limit: int,
) -> None:
    """Paging with the backend's own read_all statement and cursors returns rows of any
    transaction-id width exactly once, ordered by (transaction id, position) as numbers.

    Real transaction ids cannot run ahead of the server's counter, so this runs the
    production statement with only its horizon replaced by the largest xid8."""
    backend = PostgresBackend(PG_URL, schema=scratch_schema)
    sql = backend._build_read_all_sql(tenant=False).replace(
        READ_HORIZON, "'18446744073709551615'::xid8")
    assert sql.count("18446744073709551615") == 1
    connection = await asyncpg.connect(PG_URL)
    try:
        # DELETE, not TRUNCATE: a dozen rows, and TRUNCATE makes new files for the table
        # and each of its indexes every example.
        await connection.execute(f'DELETE FROM "{scratch_schema}".events')
        # One statement for the example's rows (a round trip each cost most of its time).
        inserted = await connection.fetch(
            f'INSERT INTO "{scratch_schema}".events (tenant_id, stream_id, stream_version, '
            "event_id, type, data, recorded_at, prev_hash, hash, tx_id) SELECT 't', 's', "
            "version, gen_random_uuid(), 'test.noted', '\\x7b7d'::bytea, now(), "
            "'\\x00'::bytea, '\\x00'::bytea, tx::xid8 "
            "FROM unnest($1::text[]) WITH ORDINALITY AS given(tx, version) "
            "RETURNING tx_id::text, position", [str(tx) for tx in tx_ids])
        written = [(int(row[0]), int(row[1])) for row in inserted]
        assert len(tx_ids) == len(written)
        read: list[tuple[int, int]] = []
        cursor: str | None = None
        while True:
            after_tx, after_position = cursors.decode_xid(cursor)
            rows = await connection.fetch(sql, str(after_tx), after_position, limit, "0")
            if not rows:
                break
            read += [(int(row[-1]), int(row[0])) for row in rows]
            cursor = cursors.encode_xid(int(rows[-1][-1]), int(rows[-1][0]))
        assert sorted(written) == read
    finally:
        await connection.close()
