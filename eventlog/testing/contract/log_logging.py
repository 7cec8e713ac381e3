"""Contract: the log reports appends and conflicts through structlog."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from eventlog import NO_STREAM, EventLog, VersionConflict
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted


class LogLoggingContract(ContractBase):
    """Contract: the log reports appends and conflicts through structlog."""

    async def test_append_logs_appended_with_its_stream(self, log: EventLog) -> None:
        """Each append logs a debug "appended" event naming tenant, stream, count and version."""
        with capture_logs() as logs:
            result = await log.append("t", "s", [Noted(text="a"), Noted(text="b")])
        appended = [entry for entry in logs if entry["event"] == "appended"]
        assert [
            {"event": "appended", "log_level": "debug", "tenant": "t", "stream": "s", "count": 2,
             "version": 2, "position": result.positions[-1]}
        ] == appended

    async def test_conflict_logs_conflicted_with_the_facts(self, log: EventLog) -> None:
        """A version conflict logs "conflicted" with stream, expected and actual version."""
        await log.append("t", "s", [Noted(text="a")])
        with capture_logs() as logs, pytest.raises(VersionConflict):
            await log.append("t", "s", [Noted(text="b")], expected_version=NO_STREAM)
        conflicted = [entry for entry in logs if entry["event"] == "conflicted"]
        assert [("s", "no stream", 1)] == [
            (entry["stream"], entry["expected"], entry["actual"]) for entry in conflicted
        ]
