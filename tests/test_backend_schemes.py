"""A backend living outside the package registers its URL scheme; open_log then opens it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eventlog import InvalidInput, InvalidURL, open_log, register_backend
from eventlog.storage.base import StorageBackend
from eventlog.storage.memory import MemoryBackend
from tests.events import Noted

ROOT = Path(__file__).resolve().parent.parent


class OutsideBackend(MemoryBackend):
    """Stands in for a third-party backend: it remembers how it was built."""

    def __init__(self, url: str, schema: str, options: dict[str, Any]) -> None:
        super().__init__()
        self.built = (url, schema, options)


def outside(url: str, *, schema: str, **options: Any) -> StorageBackend:
    """The factory a third-party package would register."""
    return OutsideBackend(url, schema, options)


register_backend("outside-test", outside)


async def test_a_registered_scheme_opens_its_backend() -> None:
    """open_log hands the URL, schema and options to the registered factory."""
    async with open_log("OUTSIDE-TEST://somewhere", schema="s1", flavour="x") as log:
        await log.append("t", "s", [Noted(text="a")])
        assert isinstance(log.storage, OutsideBackend)
        assert ("OUTSIDE-TEST://somewhere", "s1", {"flavour": "x"}) == log.storage.built
        head = await log.stream_head("t", "s")
    assert head is not None
    assert 1 == head[0]


def test_a_taken_scheme_is_not_silently_replaced() -> None:
    """Registering another factory for a registered scheme is refused."""
    with pytest.raises(InvalidInput, match="already registered"):
        register_backend("sqlite", outside)


async def test_an_unknown_scheme_names_the_known_ones() -> None:
    """The error lists the schemes that would work."""
    with pytest.raises(InvalidURL, match="outside-test"):
        async with open_log("nosuch://x"):
            pass


def test_the_contract_suite_runs_against_a_backend_from_outside() -> None:
    """EVENTLOG_TEST_BACKEND_PLUGIN and _URL add an outside backend to every contract test."""
    environment = {
        **os.environ,
        "EVENTLOG_TEST_BACKEND_PLUGIN": "tests.outside.backend",
        "EVENTLOG_TEST_BACKEND_URL": "outside-file://{tmp}/store-{unique}",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-k", "extra",
         "tests/contract/test_log_append.py", "tests/contract/test_checkpoints.py"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert 0 == result.returncode, result.stdout[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]
    assert "failed" not in result.stdout.splitlines()[-1]
