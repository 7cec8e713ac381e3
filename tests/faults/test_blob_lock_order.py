"""Concurrent appends that add or release the same blobs never deadlock on PostgreSQL.

Found by the soak: two session deletes releasing shared state blobs in different orders
each locked one blob row and waited for the other's ("deadlock detected", a StorageError
the caller had to retry). Blob rows are now touched in one global order (by digest).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from eventlog import CheckpointRecord, open_log
from tests.conftest import PG_URL

pytestmark = pytest.mark.postgres


async def test_deletes_releasing_shared_blobs_in_opposite_orders_do_not_deadlock(
    pg_schema: str,
) -> None:
    """Sessions holding the same 12 states in opposite orders, deleted at once, 10 times."""
    states = [{"shared": n} for n in range(12)]
    async with open_log(PG_URL, schema=pg_schema) as log:
        for round_ in range(10):
            sessions = [f"r{round_}-{n}" for n in range(4)]
            for number, session in enumerate(sessions):
                ordered = states if number % 2 else list(reversed(states))
                for state in ordered:
                    await log.checkpoints.create(CheckpointRecord(
                        tenant_id="t", session_id=session, run_id=uuid.uuid4(), state=state))
            deleted = await asyncio.gather(
                *(log.checkpoints.delete("t", session) for session in sessions))
            assert [12] * 4 == deleted
        assert {} == dict(await log.storage.blob_refs("t"))
        assert (await log.verify()).ok
