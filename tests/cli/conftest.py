"""Fixtures for the command's tests: one seeded story per backend, shared by the tests
that only read it (each module seeds its own); tests that change the log seed their own
through the ``target`` fixture."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from tests.cli.helpers import Run, Story, make_runner, seed_story
from tests.conftest import PG_URL, BackendTarget, drop_schema, require_postgres


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[BackendTarget, Story]]:
    """A log on each backend holding one story (and another tenant), for reading only."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("cli") / "log.db"
        target = BackendTarget("sqlite", f"sqlite:///{path}")
        yield target, seed_story(target)
        return
    require_postgres()
    target = BackendTarget("postgresql", PG_URL, f"t_{uuid.uuid4().hex[:12]}")
    try:
        yield target, seed_story(target)
    finally:
        asyncio.run(drop_schema(target.schema))


@pytest.fixture
def story(seeded: tuple[BackendTarget, Story]) -> Story:
    """The shared story's ids and positions."""
    return seeded[1]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], seeded: tuple[BackendTarget, Story]) -> Run:
    """``eventlog ARGS`` against the shared story's log, in-process."""
    return make_runner(capsys, seeded[0])


@pytest.fixture
def own_story(target: BackendTarget) -> Story:
    """A story in a log of this test's own (for tests that change the log)."""
    return seed_story(target)


@pytest.fixture
def own_run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    """``eventlog ARGS`` against this test's own log."""
    return make_runner(capsys, target)
