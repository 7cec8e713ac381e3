"""`KeyStorage`: each method asked of the backend directly (the subject keys' rows, and the
keyrings they are wrapped under)."""

from __future__ import annotations

from datetime import UTC, datetime

from eventlog import OpenLog
from eventlog.log import KeyringRow, KeyRow
from eventlog.testing.contract._base import ContractBackend, ContractBase

_NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _row(tenant: str = "t", subject: str = "s", generation: int = 1, kek: str = "k1",
         wrapped: bytes | None = b"w" * 40) -> KeyRow:
    return KeyRow(tenant, subject, generation, kek, wrapped, _NOW)


class KeyStorageCalls(ContractBase):
    """Rows of wrapped data keys: added once, destroyed for good, re-wrapped, paged."""

    async def test_a_key_row_is_added_once_and_read_back(self, log: OpenLog) -> None:
        """add_subject_key stores a row; a second row of the same generation is refused."""
        assert await log.storage.add_subject_key(_row())
        assert not await log.storage.add_subject_key(_row(wrapped=b"other" * 8))
        assert [_row()] == await log.storage.subject_keys("t", "s")

    async def test_key_rows_are_a_tenants_own(self, log: OpenLog) -> None:
        """Another tenant's subject of the same name has no rows."""
        await log.storage.add_subject_key(_row())
        assert [] == await log.storage.subject_keys("intruder", "s")

    async def test_destroying_keys_empties_them_for_good(self, log: OpenLog) -> None:
        """destroy_subject_keys empties every held generation, counts them, and a rewrap
        afterwards changes nothing."""
        await log.storage.add_subject_key(_row())
        await log.storage.add_subject_key(_row(generation=2))
        assert 2 == await log.storage.destroy_subject_keys("t", "s", _NOW)
        assert 0 == await log.storage.destroy_subject_keys("t", "s", _NOW)
        assert 0 == await log.storage.rewrap_subject_keys([_row(kek="k2")], "k1")
        rows = await log.storage.subject_keys("t", "s")
        assert [(None, _NOW), (None, _NOW)] == [(row.wrapped, row.erased_at) for row in rows]

    async def test_rewrapping_changes_only_rows_under_the_old_kek(self, log: OpenLog) -> None:
        """rewrap_subject_keys replaces rows still wrapped under the old KEK, once."""
        await log.storage.add_subject_key(_row())
        new = _row(kek="k2", wrapped=b"n" * 40)
        assert 1 == await log.storage.rewrap_subject_keys([new], "k1")
        assert 0 == await log.storage.rewrap_subject_keys([new], "k1")
        assert [new] == await log.storage.subject_keys("t", "s")

    async def test_key_rows_page_in_order_across_tenants(self, log: OpenLog) -> None:
        """subject_keys_page walks (tenant, subject, generation) order after a key."""
        rows = [_row("b", "x"), _row("a", "y", 2), _row("a", "y"), _row("a", "z")]
        for row in rows:
            await log.storage.add_subject_key(row)
        first = await log.storage.subject_keys_page(None, 2)
        rest = await log.storage.subject_keys_page(
            (first[-1].tenant_id, first[-1].subject, first[-1].generation), 10)
        assert [("a", "y", 1), ("a", "y", 2), ("a", "z", 1), ("b", "x", 1)] == [
            (row.tenant_id, row.subject, row.generation) for row in first + rest]

    async def test_key_rows_outlive_reopening(self, backend: ContractBackend) -> None:
        """A destroyed key stays destroyed after the store is closed and reopened."""
        backend.require_persistent()
        async with backend.open() as log:
            await log.storage.add_subject_key(_row())
            await log.storage.destroy_subject_keys("t", "s", _NOW)
            await log.storage.add_subject_key(_row(subject="kept"))
        async with backend.open() as log:
            assert [None] == [row.wrapped for row in await log.storage.subject_keys("t", "s")]
            assert [_row(subject="kept")] == await log.storage.subject_keys("t", "kept")

    async def test_a_keyring_row_is_added_once_listed_and_dropped(self, log: OpenLog) -> None:
        """add_keyring stores a KEK id's row once; keyrings lists them by id; drop_keyring
        deletes one, once."""
        first, second = KeyringRow("k2", b"c" * 40, _NOW), KeyringRow("k1", b"d" * 40, _NOW)
        assert [] == await log.storage.keyrings()
        assert (True, True) == (await log.storage.add_keyring(first),
                                await log.storage.add_keyring(second))
        assert not await log.storage.add_keyring(KeyringRow("k2", b"x" * 40, _NOW))
        assert [second, first] == await log.storage.keyrings()
        assert (True, False) == (await log.storage.drop_keyring("k1"),
                                 await log.storage.drop_keyring("k1"))
        assert [first] == await log.storage.keyrings()

    async def test_keyring_rows_outlive_reopening(self, backend: ContractBackend) -> None:
        """A keyring row is still there after the store is closed and reopened."""
        backend.require_persistent()
        async with backend.open() as log:
            await log.storage.add_keyring(KeyringRow("k1", b"c" * 40, _NOW))
        async with backend.open() as log:
            assert [KeyringRow("k1", b"c" * 40, _NOW)] == await log.storage.keyrings()
