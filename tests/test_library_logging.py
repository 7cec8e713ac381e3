"""The library stays quiet inside a host: standard-library logging unless structlog is set up."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from eventlog import open_log
from tests.events import Noted


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as a host that never configured it has it (restored afterwards)."""
    saved, was = structlog.get_config(), structlog.is_configured()
    structlog.reset_defaults()
    yield
    structlog.configure(**saved)
    if not was:
        structlog.reset_defaults()


@pytest.mark.usefixtures("unconfigured_structlog")
async def test_appends_print_nothing_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    """Without any logging configured, an append writes nothing to stdout or stderr."""
    async with open_log("memory://") as log:
        await log.append("t", "s", [Noted(text="a")])
    assert ("", "") == capsys.readouterr()


@pytest.mark.usefixtures("unconfigured_structlog")
async def test_debug_events_reach_standard_logging(caplog: pytest.LogCaptureFixture) -> None:
    """A host that turns on DEBUG for ``eventlog`` sees the events with their values."""
    with caplog.at_level(logging.DEBUG, logger="eventlog"):
        async with open_log("memory://") as log:
            await log.append("t", "s", [Noted(text="a")])
    appended = [r for r in caplog.records if r.structured["event"] == "appended"]
    assert [("eventlog.log", "DEBUG", "s")] == [
        (r.name, r.levelname, r.structured["stream"]) for r in appended
    ]
    assert appended[0].getMessage().startswith("appended tenant='t' stream='s'")


async def test_a_host_that_configured_structlog_gets_structlog_events() -> None:
    """capture_logs (a structlog configuration) still sees every event."""
    with capture_logs() as logs:
        async with open_log("memory://") as log:
            await log.append("t", "s", [Noted(text="a")])
    assert ["appended"] == [entry["event"] for entry in logs]
