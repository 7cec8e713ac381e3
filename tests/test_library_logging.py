"""The library stays quiet inside a host: standard-library logging unless structlog is set up."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from eventlog import open_log
from eventlog._logging import get_logger
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


class _Loud:
    """A value that records whether anything rendered it."""

    rendered = 0

    def __repr__(self) -> str:
        _Loud.rendered += 1
        return "loud"


@pytest.mark.usefixtures("unconfigured_structlog")
def test_a_filtered_event_is_not_rendered_and_a_new_configuration_takes_effect() -> None:
    """Below a configured structlog level nothing is rendered; configuring structlog again
    (a level, a processor) applies to the very next call, although the bound logger is
    kept between calls."""
    logger = get_logger("eventlog.test")
    seen: list[dict[str, Any]] = []

    def keep(_: Any, __: str, event: dict[str, Any]) -> str:
        seen.append(dict(event))
        return repr(event)

    structlog.configure(processors=[keep],
                        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.ReturnLoggerFactory())
    _Loud.rendered = 0
    logger.debug("quiet", value=_Loud())
    assert (0, []) == (_Loud.rendered, seen)
    logger.warning("loud", value=_Loud())
    assert ["loud"] == [event["event"] for event in seen]
    assert 1 == _Loud.rendered
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    logger.debug("now shown")
    with capture_logs() as captured:
        logger.info("captured")
    logger.info("after capture")
    assert ["loud", "now shown", "after capture"] == [event["event"] for event in seen]
    assert ["captured"] == [event["event"] for event in captured]


@pytest.mark.usefixtures("unconfigured_structlog")
def test_structlog_logger_is_built_once_per_configuration() -> None:
    """Filtered calls do not build a structlog logger each time (its lazy proxy would call
    the logger factory on every call): one build per configuration."""
    built: list[tuple[Any, ...]] = []

    def factory(*args: Any) -> structlog.ReturnLogger:
        built.append(args)
        return structlog.ReturnLogger()

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=factory)
    logger = get_logger("eventlog.test")
    for _ in range(100):
        logger.debug("filtered", n=1)
    assert [("eventlog.test",)] == built
