"""Issue 40's attacks of the database administrator, replayed on the Citus cluster for the
tables it holds there: a consumer's cursor moved forward (the `consumers` table), a pending
batch's view row set to ``expired`` before a retention pass (`interrupt_batches`,
distributed by tenant), and an erased subject's key row written back from a backup
(`subject_keys`). Each is the SQLite/PostgreSQL test itself, given a target on the cluster
with a keyring (so a writer key signs every append and consumer row); the DBA's edits are
SQL on the coordinator, from outside the library (`tests/signing_outside.rows`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.crypto import init_keyring
from tests import test_consumer_seal, test_erasure_undo, test_trust_only_the_log
from tests.citus import cluster
from tests.conftest import BackendTarget

pytestmark = pytest.mark.citus


def _signed_target(schema: str, tmp_path: Path) -> BackendTarget:
    keyring = init_keyring(tmp_path / "keyring.json")
    return BackendTarget("postgresql", f"{cluster.URL}&distributed=true", schema,
                         keyring=str(keyring.path))


async def test_a_consumer_cursor_moved_forward_is_refused_on_the_cluster(
        distributed_schema: str, tmp_path: Path) -> None:
    """`ConsumerTampered` (forged), not a silent skip."""
    await test_consumer_seal.test_a_cursor_moved_forward_is_refused_not_skipped(
        _signed_target(distributed_schema, tmp_path))


async def test_a_batch_the_dba_expired_keeps_its_session_on_the_cluster(
        distributed_schema: str, tmp_path: Path) -> None:
    """The pass decides open batches from the batch streams' checked events."""
    await test_trust_only_the_log.test_a_pending_batch_the_dba_marked_expired_still_keeps_its_session(  # noqa: E501
        _signed_target(distributed_schema, tmp_path))


async def test_a_key_written_back_after_erasure_is_refused_on_the_cluster(
        distributed_schema: str, tmp_path: Path) -> None:
    """The subject stays erased and verify names the restored key."""
    await test_erasure_undo.test_a_key_written_back_after_erasure_is_refused_and_named(
        _signed_target(distributed_schema, tmp_path))
