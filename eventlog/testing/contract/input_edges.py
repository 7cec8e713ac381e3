"""Contract: edge inputs found in review are each a clear InvalidInput naming the field,
never a driver error or a Python ValueError from deep inside."""

from __future__ import annotations

import base64
import uuid
from dataclasses import replace

import pytest

from eventlog import (
    CheckpointRecord,
    Interrupt,
    InvalidId,
    InvalidInput,
    OpenLog,
    Resume,
    ResumeInput,
)
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted
from eventlog.testing.helpers import settle

BAD_CURSORS = ["p:²", "p:" + str(2**70), "x:1:" + str(2**64), "x:" + str(2**65) + ":1", "p:-1"]


class InputEdgesContract(ContractBase):
    """Contract: edge inputs (forged cursors and tokens, overlong thread ids) are refused
    as InvalidInput naming the field."""

    @pytest.mark.parametrize("cursor", BAD_CURSORS)
    async def test_read_all_refuses_cursors_it_never_returned(self, log: OpenLog,
                                                              cursor: str) -> None:
        """Unicode digits and numbers past 64 bits are refused, naming ``after``."""
        await log.append("t", "s", [Noted(text="a")])
        with pytest.raises(InvalidInput) as raised:
            await log.read_all(after=cursor)
        assert "after" == raised.value.field

    @pytest.mark.parametrize("number", ["²", str(2**70)])
    async def test_interrupt_list_refuses_forged_cursors(self, log: OpenLog,
                                                         number: str) -> None:
        """A base64 cursor holding a Unicode digit or a huge number is refused, naming
        ``cursor``."""
        forged = base64.urlsafe_b64encode(f"l1:{number}".encode()).decode()
        with pytest.raises(InvalidInput) as raised:
            await log.interrupts.list(["t"], cursor=forged)
        assert "cursor" == raised.value.field

    async def test_a_claim_with_a_forged_token_is_refused_and_writes_nothing(
        self, log: OpenLog
    ) -> None:
        """A claim whose token is not a string is an input error, not an AttributeError."""
        record = await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="thread", run_id=uuid.uuid4(), state={}))
        assert record.checkpoint_id is not None  # create assigns one
        batch = await log.interrupts.create(
            "t", "thread", [Interrupt(id="ok", reason="confirmation")], record.checkpoint_id,
            operation=("op", "1"))
        result = await log.interrupts.try_claim("t", ResumeInput(
            thread_id="thread", batch_id=batch.batch_id,
            responses=[Resume(interrupt_id="ok", status="resolved")]))
        assert result.claim is not None
        await settle(log)  # the claim, just committed, is readable (the read horizon)
        before = (await log.read_all()).events
        forged = replace(result.claim, token=None)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput) as raised:
            await log.interrupts.try_start_effect(forged)
        await settle(log)
        assert ("claim.token", before) == (raised.value.field, (await log.read_all()).events)

    async def test_a_thread_id_too_long_to_be_a_session_is_refused_at_create(
        self, log: OpenLog
    ) -> None:
        """A thread is a checkpoint session, so create refuses a thread id over 247
        characters."""
        with pytest.raises(InvalidId) as raised:
            await log.interrupts.create(
                "t", "x" * 250, [Interrupt(id="ok", reason="confirmation")], "cp",
                operation=("op", "1"))
        assert "thread_id" == raised.value.field
