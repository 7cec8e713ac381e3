"""PostgreSQL: every interrupt append takes the one-statement path. (The interrupt store's
contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from typing import Any

from eventlog.testing.interrupts import FakeClock, open_interrupt_log, whole_flow
from tests.conftest import PG_URL, BackendTarget


async def test_every_interrupt_append_is_one_postgresql_statement(pg_schema: str) -> None:
    """Each event changes one row, so every append takes PostgreSQL's one-statement path."""
    clock = FakeClock()
    target = BackendTarget("postgresql", PG_URL, pg_schema)
    async with open_interrupt_log(target, clock) as log:
        storage: Any = log.storage
        shapes: list[bool] = []
        single = storage.single_statement

        def spy(request: Any, **options: Any) -> Any:
            statement = single(request, **options)
            shapes.append(statement is not None)
            return statement

        storage.single_statement = spy
        await whole_flow(log)
        clock.advance(days=2)
        await log.interrupts.cleanup()
    assert [True] * 7 == shapes
