"""`KeyStorage` in a dictionary (memory backend), saved to ``keys.json`` by the file store."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from eventlog.storage.contracts.keys import KeyringRow, KeyRow, KeyStorage


class KeysInMemory(KeyStorage):
    """Subject keys in ``self.subject_key_rows``; `keys_changed` runs after every change."""

    subject_key_rows: dict[tuple[str, str, int], KeyRow]

    def keys_changed(self) -> None:
        """Called after a change (the file store writes its file here)."""

    def _key_rows(self) -> dict[tuple[str, str, int], KeyRow]:
        if not hasattr(self, "subject_key_rows"):
            self.subject_key_rows = {}
        return self.subject_key_rows

    def _keyring_rows(self) -> dict[str, KeyringRow]:
        if not hasattr(self, "keyring_rows"):
            self.keyring_rows: dict[str, KeyringRow] = {}
        return self.keyring_rows

    async def keyrings(self) -> list[KeyringRow]:
        return [row for _, row in sorted(self._keyring_rows().items())]

    async def add_keyring(self, row: KeyringRow) -> bool:
        rows = self._keyring_rows()
        if row.kek_id in rows:
            return False
        rows[row.kek_id] = row
        self.keys_changed()
        return True

    async def drop_keyring(self, kek_id: str) -> bool:
        if self._keyring_rows().pop(kek_id, None) is None:
            return False
        self.keys_changed()
        return True

    async def subject_keys(self, tenant_id: str, subject: str) -> list[KeyRow]:
        return sorted((row for key, row in self._key_rows().items()
                       if key[:2] == (tenant_id, subject)), key=lambda row: row.generation)

    async def add_subject_key(self, row: KeyRow) -> bool:
        rows = self._key_rows()
        key = (row.tenant_id, row.subject, row.generation)
        if key in rows:
            return False
        rows[key] = row
        self.keys_changed()
        return True

    async def destroy_subject_keys(self, tenant_id: str, subject: str,
                                   erased_at: datetime) -> int:
        rows = self._key_rows()
        held = [key for key, row in rows.items()
                if key[:2] == (tenant_id, subject) and row.wrapped is not None]
        for key in held:
            rows[key] = dataclasses.replace(rows[key], wrapped=None, erased_at=erased_at)
        if held:
            self.keys_changed()
        return len(held)

    async def subject_keys_page(self, after: tuple[str, str, int] | None,
                                limit: int) -> list[KeyRow]:
        keys = sorted(key for key in self._key_rows() if after is None or key > after)
        return [self._key_rows()[key] for key in keys[:limit]]

    async def rewrap_subject_keys(self, rows: Sequence[KeyRow], old_kek_id: str) -> int:
        stored = self._key_rows()
        changed = 0
        for row in rows:
            key = (row.tenant_id, row.subject, row.generation)
            have = stored.get(key)
            if have is not None and have.wrapped is not None and have.kek_id == old_kek_id:
                stored[key] = dataclasses.replace(have, wrapped=row.wrapped, kek_id=row.kek_id)
                changed += 1
        if changed:
            self.keys_changed()
        return changed


def rows_to_json(rows: dict[tuple[str, str, int], KeyRow]) -> list[dict[str, Any]]:
    """The rows as JSON values (the file store's ``keys.json``)."""
    return [{"tenant_id": row.tenant_id, "subject": row.subject, "generation": row.generation,
             "kek_id": row.kek_id,
             "wrapped": None if row.wrapped is None else base64.b64encode(row.wrapped).decode(),
             "created_at": row.created_at.isoformat(),
             "erased_at": None if row.erased_at is None else row.erased_at.isoformat()}
            for row in rows.values()]


def keyrings_to_json(rows: dict[str, KeyringRow]) -> list[dict[str, Any]]:
    """The keyring rows as JSON values (the file store's ``keys.json``)."""
    return [{"kek_id": row.kek_id, "check_value": base64.b64encode(row.check_value).decode(),
             "created_at": row.created_at.isoformat()} for row in rows.values()]


def keyrings_from_json(items: list[dict[str, Any]]) -> dict[str, KeyringRow]:
    return {item["kek_id"]: KeyringRow(item["kek_id"], base64.b64decode(item["check_value"]),
                                       datetime.fromisoformat(item["created_at"]))
            for item in items}


def rows_from_json(items: list[dict[str, Any]]) -> dict[tuple[str, str, int], KeyRow]:
    rows = {}
    for item in items:
        row = KeyRow(item["tenant_id"], item["subject"], int(item["generation"]),
                     item["kek_id"],
                     None if item["wrapped"] is None else base64.b64decode(item["wrapped"]),
                     datetime.fromisoformat(item["created_at"]),
                     None if item["erased_at"] is None else datetime.fromisoformat(
                         item["erased_at"]))
        rows[(row.tenant_id, row.subject, row.generation)] = row
    return rows
