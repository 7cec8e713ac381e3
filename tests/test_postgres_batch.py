"""PostgreSQL: a batched append of checkpoints is one statement, whatever its size."""

from __future__ import annotations

import uuid

from eventlog import open_log
from eventlog.storage.postgres import PostgresBackend
from eventlog.testing.contract.log_batch import session_append
from tests.conftest import PG_URL


async def test_checkpoint_batches_of_any_size_share_one_statement(pg_schema: str) -> None:
    """Batches of 1 and 30 sessions, new and continued, all run the one cached statement."""
    async with open_log(PG_URL, schema=pg_schema) as log:
        storage = log.storage
        assert isinstance(storage, PostgresBackend)
        fetched: list[str] = []
        async with storage.driver_connection() as driver:
            fetch = type(driver).fetch

            async def counting(self: object, sql: str, *args: object) -> object:
                fetched.append(sql)
                return await fetch(self, sql, *args)  # type: ignore[arg-type]

            type(driver).fetch = counting  # type: ignore[method-assign]
        try:
            await log.append_batch([session_append("a", uuid.uuid4(), range(3))])
            await log.append_batch([session_append(f"s{n}", uuid.uuid4(), range(5))
                                    for n in range(30)])
            await log.append_batch([session_append(f"s{n}", uuid.uuid4(), range(5, 7))
                                    for n in range(30)])
        finally:
            type(driver).fetch = fetch  # type: ignore[method-assign]
        appends = [sql for sql in fetched if sql.startswith("WITH e AS (INSERT")]
        assert 3 == len(appends)
        assert 1 == len(set(appends))
        assert (await log.verify()).ok
