"""The subject keys table on SQLite and PostgreSQL (`KeyStorage`): each method one statement.

Inside `hold_stream` both run on the holding transaction's connection (SQLite has one
writer: a second write transaction would wait on our own lock).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from eventlog.storage.contracts.keys import KeyringRow, KeyRow, KeyStorage
from eventlog.storage.schema import KEY_TABLE, KEYRING_TABLE

_COLUMNS = "tenant_id, subject, generation, kek_id, wrapped, created_at, erased_at"


def _row(values: Sequence[Any]) -> KeyRow:
    tenant, subject, generation, kek_id, wrapped, created, erased = values
    return KeyRow(tenant, subject, int(generation), kek_id,
                  None if wrapped is None else bytes(wrapped), _aware(created),
                  None if erased is None else _aware(erased))


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class SqliteKeys(KeyStorage):
    """`KeyStorage` over SQLAlchemy Core on SQLite's connections."""

    if TYPE_CHECKING:
        tables: sa.util.FacadeDict[str, sa.Table]
        schema: str | None
        _held: Any

        def read_connection(self) -> AbstractAsyncContextManager[Any]: ...
        def write_transaction(self) -> AbstractAsyncContextManager[Any]: ...
        def translate(self, error: BaseException, operation: str) -> BaseException: ...

    def _keys(self) -> sa.Table:
        return self.tables[f"{self.schema}.{KEY_TABLE}" if self.schema else KEY_TABLE]

    def _keyrings(self) -> sa.Table:
        return self.tables[f"{self.schema}.{KEYRING_TABLE}" if self.schema else KEYRING_TABLE]

    async def keyrings(self) -> list[KeyringRow]:
        table = self._keyrings()
        async with self.read_connection() as connection:
            rows = await connection.execute(sa.select(
                table.c.kek_id, table.c.check_value, table.c.created_at
            ).order_by(table.c.kek_id))
            return [KeyringRow(kek_id, bytes(check), _aware(created))
                    for kek_id, check, created in rows]

    async def add_keyring(self, row: KeyringRow) -> bool:
        async with self._writing() as connection:
            added = await connection.execute(
                sa.insert(self._keyrings()).prefix_with("OR IGNORE").values(
                    kek_id=row.kek_id, check_value=row.check_value,
                    created_at=row.created_at))
            return bool(added.rowcount == 1)

    async def drop_keyring(self, kek_id: str) -> bool:
        table = self._keyrings()
        async with self._writing() as connection:
            done = await connection.execute(sa.delete(table).where(table.c.kek_id == kek_id))
            return bool(done.rowcount)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[Any]:
        held = self._held.get()
        try:
            if held is not None:
                yield held
            else:
                async with self.write_transaction() as connection:
                    yield connection
        except Exception as error:
            raise self.translate(error, "keys") from error

    async def subject_keys(self, tenant_id: str, subject: str) -> list[KeyRow]:
        keys = self._keys()
        async with self.read_connection() as connection:
            rows = await connection.execute(sa.select(*keys.c).where(
                keys.c.tenant_id == tenant_id, keys.c.subject == subject
            ).order_by(keys.c.generation))
            return [_row(row) for row in rows]

    async def add_subject_key(self, row: KeyRow) -> bool:
        async with self._writing() as connection:
            added = await connection.execute(
                sa.insert(self._keys()).prefix_with("OR IGNORE").values(
                    tenant_id=row.tenant_id, subject=row.subject, generation=row.generation,
                    kek_id=row.kek_id, wrapped=row.wrapped, created_at=row.created_at,
                    erased_at=row.erased_at))
            return bool(added.rowcount == 1)

    async def destroy_subject_keys(self, tenant_id: str, subject: str,
                                   erased_at: datetime) -> int:
        keys = self._keys()
        async with self._writing() as connection:
            done = await connection.execute(sa.update(keys).where(
                keys.c.tenant_id == tenant_id, keys.c.subject == subject,
                keys.c.wrapped.is_not(None)).values(wrapped=None, erased_at=erased_at))
            return int(done.rowcount)

    async def subject_keys_page(self, after: tuple[str, str, int] | None,
                                limit: int) -> list[KeyRow]:
        keys = self._keys()
        select = sa.select(*keys.c).order_by(keys.c.tenant_id, keys.c.subject,
                                             keys.c.generation).limit(limit)
        if after is not None:
            select = select.where(sa.tuple_(keys.c.tenant_id, keys.c.subject,
                                            keys.c.generation) > sa.tuple_(*after))
        async with self.read_connection() as connection:
            return [_row(row) for row in await connection.execute(select)]

    async def rewrap_subject_keys(self, rows: Sequence[KeyRow], old_kek_id: str) -> int:
        keys = self._keys()
        changed = 0
        async with self._writing() as connection:
            for row in rows:
                done = await connection.execute(sa.update(keys).where(
                    keys.c.tenant_id == row.tenant_id, keys.c.subject == row.subject,
                    keys.c.generation == row.generation, keys.c.kek_id == old_kek_id,
                    keys.c.wrapped.is_not(None)).values(wrapped=row.wrapped,
                                                         kek_id=row.kek_id))
                changed += int(done.rowcount)
        return changed


class PostgresKeys(KeyStorage):
    """`KeyStorage` over asyncpg, one statement a call."""

    if TYPE_CHECKING:
        qualified: dict[str, str]

        async def _fetch(self, operation: str, sql: str, params: list[Any]) -> list[Any]: ...

    def _key_table(self) -> str:
        return self.qualified[KEY_TABLE]

    async def keyrings(self) -> list[KeyringRow]:
        rows = await self._fetch("read", "SELECT kek_id, check_value, created_at FROM "
                                 f"{self.qualified[KEYRING_TABLE]} ORDER BY kek_id", [])
        return [KeyringRow(row[0], bytes(row[1]), _aware(row[2])) for row in rows]

    async def add_keyring(self, row: KeyringRow) -> bool:
        rows = await self._fetch(
            "keys", f"INSERT INTO {self.qualified[KEYRING_TABLE]} (kek_id, check_value, "
            "created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
            [row.kek_id, row.check_value, row.created_at])
        return bool(rows)

    async def drop_keyring(self, kek_id: str) -> bool:
        rows = await self._fetch(
            "keys", f"DELETE FROM {self.qualified[KEYRING_TABLE]} WHERE kek_id = $1 "
            "RETURNING 1", [kek_id])
        return bool(rows)

    async def subject_keys(self, tenant_id: str, subject: str) -> list[KeyRow]:
        rows = await self._fetch(
            "read", f"SELECT {_COLUMNS} FROM {self._key_table()} WHERE tenant_id = $1 AND "
            "subject = $2 ORDER BY generation", [tenant_id, subject])
        return [_row(row) for row in rows]

    async def add_subject_key(self, row: KeyRow) -> bool:
        # A key's row is never overwritten: a second writer's insert yields to the first.
        rows = await self._fetch(
            "keys", f"INSERT INTO {self._key_table()} ({_COLUMNS}) VALUES ($1, $2, $3, $4, "
            "$5, $6, $7) ON CONFLICT DO NOTHING RETURNING 1",
            [row.tenant_id, row.subject, row.generation, row.kek_id, row.wrapped,
             row.created_at, row.erased_at])
        return bool(rows)

    async def destroy_subject_keys(self, tenant_id: str, subject: str,
                                   erased_at: datetime) -> int:
        rows = await self._fetch(
            "keys", f"UPDATE {self._key_table()} SET wrapped = NULL, erased_at = $3 WHERE "
            "tenant_id = $1 AND subject = $2 AND wrapped IS NOT NULL RETURNING 1",
            [tenant_id, subject, erased_at])
        return len(rows)

    async def subject_keys_page(self, after: tuple[str, str, int] | None,
                                limit: int) -> list[KeyRow]:
        if after is None:
            rows = await self._fetch(
                "read", f"SELECT {_COLUMNS} FROM {self._key_table()} ORDER BY tenant_id, "
                "subject, generation LIMIT $1", [limit])
        else:
            rows = await self._fetch(
                "read", f"SELECT {_COLUMNS} FROM {self._key_table()} WHERE (tenant_id, "
                "subject, generation) > ($1, $2, $3) ORDER BY tenant_id, subject, generation "
                "LIMIT $4", [*after, limit])
        return [_row(row) for row in rows]

    async def rewrap_subject_keys(self, rows: Sequence[KeyRow], old_kek_id: str) -> int:
        if not rows:
            return 0
        done = await self._fetch(
            "keys", f"UPDATE {self._key_table()} k SET wrapped = n.wrapped, kek_id = n.kek_id "
            "FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[], $5::text[]) AS "
            "n(tenant_id, subject, generation, wrapped, kek_id) WHERE k.tenant_id = "
            "n.tenant_id AND k.subject = n.subject AND k.generation = n.generation AND "
            "k.kek_id = $6 AND k.wrapped IS NOT NULL RETURNING 1",
            [[row.tenant_id for row in rows], [row.subject for row in rows],
             [row.generation for row in rows], [row.wrapped for row in rows],
             [row.kek_id for row in rows], old_kek_id])
        return len(done)
