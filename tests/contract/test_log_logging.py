"""The SQL stores log their schema upgrade through structlog. (The append and conflict
logging contract ships in `eventlog.testing`.)"""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from eventlog import open_log
from tests.conftest import BackendTarget


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_first_open_logs_schema_upgraded(target: BackendTarget) -> None:
    """Opening an empty database logs "schema_upgraded" once; reopening logs nothing."""
    with capture_logs() as first:
        async with open_log(target.url, **target.options()):
            pass
    with capture_logs() as second:
        async with open_log(target.url, **target.options()):
            pass
    upgraded = [entry for entry in first if entry["event"] == "schema_upgraded"]
    assert [None] == [entry["from_revision"] for entry in upgraded]
    assert [] == [entry for entry in second if entry["event"] == "schema_upgraded"]
