"""Applying view changes on a SQL backend outside an append, with the SQL text its append
runs (`eventlog.storage.sqltext.change_sql`): for tests that redeliver or seed views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventlog.storage.postgres import PostgresBackend
from eventlog.storage.sqlite import encode_value
from eventlog.storage.sqltext import change_sql
from projections.changes import Change


async def apply_changes(storage: Any, applied: Sequence[tuple[Change, int]]) -> None:
    """Apply view changes with the SQL text a backend's append runs, in one transaction."""

    def statement(change: Change, position: int) -> tuple[str, list[Any]]:
        param = storage.new_param()
        sql = change_sql(change, storage.qualified[change.table],
                         storage.view_keys[change.table], param, position)
        return sql, param.values

    statements = [statement(change, position) for change, position in applied]
    if isinstance(storage, PostgresBackend):
        async with storage.driver_connection() as driver, driver.transaction():
            for sql, values in statements:
                await driver.execute(sql, *values)
    else:
        async with storage.write_transaction() as connection:
            for sql, values in statements:
                await connection.exec_driver_sql(sql, tuple(map(encode_value, values)))
