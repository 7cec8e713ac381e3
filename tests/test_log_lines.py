"""Log lines carry ids, counts and reasons, never a stored value (issue 40 §4): every
store's calls, on an encrypted log, with a marker in every value the issue names and in a
rejected resume answer, a refused fenced write, a copy, a prune, a retention pass, an
erasure, an export and an import, captured at every level (`structlog.testing`)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from eventlog import open_log
from eventlog.checkpoints import Payload
from eventlog.crypto import init_keyring
from eventlog.errors import NotThreadHead
from eventlog.interrupts import Resume, ResumeInput
from eventlog.interrupts.models import Interrupt
from eventlog.testing.interrupts import APPROVAL, OPTIONS, PAY, FakeClock
from eventlog.transfer import export_log, import_log
from tests.test_encryption import MARKERS, populate


async def test_no_stored_value_is_in_any_log_line(tmp_path: Path) -> None:
    """Nothing any call logs holds a marker (the rejected answer's included)."""
    keyring = init_keyring(tmp_path / "keyring.json")
    clock = FakeClock()
    with capture_logs() as logs:
        async with open_log(f"sqlite:///{tmp_path / 'log.db'}", keyring=keyring,
                            clock=clock, interrupt_options=OPTIONS) as log:
            await populate(log, clock)
            batch = await log.interrupts.create("t", "th3", [Interrupt(
                id="a", reason="confirmation", message="MARKER-MESSAGE",
                response_schema=APPROVAL)], "c1", operation=PAY)
            rejected = await log.interrupts.try_claim("t", ResumeInput(
                thread_id="th3", batch_id=batch.batch_id, responses=[Resume(
                    interrupt_id="a", status="resolved",
                    payload={"approved": "MARKER-REJECTED"})]))
            threads = log.checkpoints.threads
            await threads.put("t", "th1", "c2", state=Payload("json", b'"MARKER-STATE"'),
                              parent_id="c1", metadata={"m": "MARKER-TMETA"})
            with pytest.raises(NotThreadHead):
                await threads.put("t", "th1", "c3", state=Payload("json", b'"MARKER-STATE"'),
                                  parent_id="c1", metadata={"m": "MARKER-TMETA"}, fenced=True)
            await threads.copy_thread("t", "th1", "th9")
            await threads.prune("t", "th9", keep_latest=1)
            await log.retention.apply("t", keep_latest=1)
            await log.erase("t", "s1", reason="asked", actor="dpo")
            sink = io.BytesIO()
            await export_log(log, sink, tenant_id="t")
        async with open_log(f"sqlite:///{tmp_path / 'copy.db'}", keyring=keyring) as copy:
            await import_log(copy, io.BytesIO(sink.getvalue()))
    lines = [repr(entry) for entry in logs]
    assert "MARKER-REJECTED" in (rejected.detail or "")  # the caller is told, the log is not
    assert (True, []) == (len(lines) > 10, [
        line for line in lines if any(marker in line for marker in
                                      (*MARKERS, "MARKER-REJECTED"))])
