"""The stores' contract suite (`StoresContract`) on an encrypted log, on every backend:
every checkpoint, thread and interrupt behaviour holds with a keyring, the states and
free-text fields sealed underneath."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventlog.crypto import init_keyring
from eventlog.testing import StoresContract
from eventlog.testing.contract._base import ContractBackend
from tests.conftest import PG_URL


class _Encrypted(StoresContract):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> ContractBackend:
        """The backend under test, on a fresh store, opened with a fresh keyring."""
        keyring = init_keyring(tmp_path / "keyring.json")
        return ContractBackend(self.backend_url(tmp_path),
                               {**self.open_options(), "keyring": keyring}, self.persistent)


@pytest.mark.sealed
class TestEncryptedMemory(_Encrypted):
    persistent = False

    def backend_url(self, tmp_path: Path) -> str:
        return "memory://"


@pytest.mark.sealed
class TestEncryptedSqlite(_Encrypted):
    def backend_url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'log.db'}"


@pytest.mark.sealed
class TestEncryptedFile(_Encrypted):
    def backend_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path / 'store'}"


@pytest.mark.postgres
@pytest.mark.sealed
class TestEncryptedPostgresql(_Encrypted):
    schema = ""

    @pytest.fixture(autouse=True)
    def _fresh_schema(self, migrated_pg_schema: str) -> None:
        self.schema = migrated_pg_schema

    def backend_url(self, tmp_path: Path) -> str:
        return PG_URL

    def open_options(self) -> dict[str, str]:
        return {"schema": self.schema}



_KEYED = "by design: an encrypted log's blob addresses are keyed, not the plain SHA-256"


def _skipped(name: str) -> Any:
    @pytest.mark.skip(reason=_KEYED)
    async def test(self: Any) -> None:
        """Asserts plain digests."""
    test.__name__ = name
    return test


for _name in ("test_a_channel_version_is_stored_once_and_goes_with_its_last_carrier",
              "test_identical_states_are_stored_once",
              "test_a_blob_shared_with_another_session_survives_delete"):
    setattr(_Encrypted, _name, _skipped(_name))
