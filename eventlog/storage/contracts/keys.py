"""The subject keys contract: each (tenant, subject)'s data keys, stored wrapped.

A row is one generation of a subject's data key, wrapped by the keyring's KEK (named by
``kek_id``). The log (`eventlog.log._sealing`) decides everything: when a key is made,
which generation is current, what an erasure destroys. A backend keeps the rows; the one
change it makes to a row is to destroy its wrapped key (erasure: ``wrapped`` becomes None
and stays so) or to replace it by the same key wrapped under another KEK (rotation).
Unlike the events, these rows are meant to change: destroying a key is what erases.

Beside them, the log records which key-encryption keys its data keys are wrapped under
(`KeyringRow`: a KEK id and a check value wrapped under that KEK), so a write without a
keyring or with another one is refused before anything is written (`eventlog.log._mode`).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from eventlog.storage.contracts.lifecycle import StorageLifecycle


@dataclass(frozen=True)
class KeyRow:
    """One generation of a subject's data key: wrapped, or destroyed (``wrapped`` None)."""

    tenant_id: str
    subject: str
    generation: int
    kek_id: str
    wrapped: bytes | None
    created_at: datetime
    erased_at: datetime | None = None


@dataclass(frozen=True)
class KeyringRow:
    """A key-encryption key the log's data keys are wrapped under: its id, and a random
    value wrapped under it (what proves a keyring is that KEK, not only of its name)."""

    kek_id: str
    check_value: bytes
    created_at: datetime


PLAIN = ""
"""The KEK id of the keyring row that records a log first written without a keyring (its
check value empty)."""


class KeyStorage(StorageLifecycle):
    """Rows of wrapped data keys. Every method is a coroutine, each one statement (one
    transaction): no partial effect is ever visible."""

    @abc.abstractmethod
    async def subject_keys(self, tenant_id: str, subject: str) -> list[KeyRow]:
        """Every generation of the subject's key within the tenant, oldest first (empty
        for a subject never written under a keyring, or another tenant's)."""

    @abc.abstractmethod
    async def add_subject_key(self, row: KeyRow) -> bool:
        """Insert ``row``; False (and nothing changed) when its (tenant, subject,
        generation) is already stored: another writer made it first."""

    @abc.abstractmethod
    async def destroy_subject_keys(self, tenant_id: str, subject: str,
                                   erased_at: datetime) -> int:
        """Destroy every wrapped key of the subject still held (``wrapped`` None,
        ``erased_at`` set); how many were destroyed (0 if none was held)."""

    @abc.abstractmethod
    async def subject_keys_page(self, after: tuple[str, str, int] | None,
                                limit: int) -> list[KeyRow]:
        """Up to ``limit`` rows of every tenant after ``after`` (tenant, subject,
        generation), in that order: a rotation's pass over the whole log."""

    @abc.abstractmethod
    async def keyrings(self) -> list[KeyringRow]:
        """Every keyring row, by KEK id (empty: the log has recorded none)."""

    @abc.abstractmethod
    async def add_keyring(self, row: KeyringRow) -> bool:
        """Insert ``row``; False (and nothing changed) when its KEK id is already stored."""

    @abc.abstractmethod
    async def drop_keyring(self, kek_id: str) -> bool:
        """Delete the row of ``kek_id`` (a rotation away from it finished); False when
        there was none."""

    @abc.abstractmethod
    async def rewrap_subject_keys(self, rows: Sequence[KeyRow], old_kek_id: str) -> int:
        """Replace each row's wrapped key by ``row.wrapped`` under ``row.kek_id``, where
        the stored row is still wrapped under ``old_kek_id`` (a destroyed key stays
        destroyed); how many rows changed."""
