"""A backend living outside the package registers its URL scheme; open_log then opens it,
and the shipped contract suite (`eventlog.testing.BackendContract`) runs against it: here
as a plain subclass, from a project outside this repo, and failing a broken backend."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from eventlog import InvalidInput, InvalidURL, open_log, register_backend
from eventlog.storage.base import StorageBackend
from eventlog.storage.memory import MemoryBackend
from eventlog.testing import BackendContract
from tests.events import Noted
from tests.outside.backend import outside_file


class OutsideBackend(MemoryBackend):
    """Stands in for a third-party backend: it remembers how it was built."""

    def __init__(self, url: str, schema: str, options: dict[str, Any]) -> None:
        super().__init__()
        self.built = (url, schema, options)


def outside(url: str, *, schema: str, **options: Any) -> StorageBackend:
    """The factory a third-party package would register."""
    return OutsideBackend(url, schema, options)


register_backend("outside-test", outside)

ROOT = Path(__file__).resolve().parent.parent


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


class TestOutsideFileBackend(BackendContract):
    """The shipped contract suite on ``outside-file://``, registered by tests/outside."""

    def backend_url(self, tmp_path: Path) -> str:
        assert outside_file  # imported for its register_backend call
        return f"outside-file://{tmp_path / 'store'}"


PROJECT_CONFTEST = """
import json
import sys
from pathlib import Path


def pytest_sessionfinish(session, exitstatus):
    # Which modules of this repo's tests/ package were loaded (none may be).
    leaked = sorted(m for m in sys.modules if m == "tests" or m.startswith("tests."))
    Path(session.config.rootpath, "leaked.json").write_text(json.dumps(leaked))
"""

PROJECT_TEST = """
from eventlog.testing import (
    BlobStorageContract,
    EventStorageContract,
    StoresContract,
    ViewStorageContract,
)

import {module}


class MyBackend:
    persistent = {persistent}

    def backend_url(self, tmp_path):
        return "{scheme}://" + str(tmp_path / "store")


class TestMyEvents(MyBackend, EventStorageContract):
    pass


class TestMyBlobs(MyBackend, BlobStorageContract):
    pass


class TestMyViews(MyBackend, ViewStorageContract):
    pass


class TestMyStores(MyBackend, StoresContract):
    pass
"""


def run_project(directory: Path, module: str, backend: str, scheme: str,
                persistent: bool = True) -> tuple[dict[str, int], str]:
    """Write a tiny project outside the repo (a backend module and a test module that
    subclasses each contract's suite, strict asyncio mode) and run pytest in it; the
    counts of its summary line and its output."""
    directory.mkdir()
    (directory / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n")
    (directory / "conftest.py").write_text(PROJECT_CONFTEST)
    (directory / f"{module}.py").write_text(textwrap.dedent(backend))
    (directory / f"test_{module}.py").write_text(
        PROJECT_TEST.format(module=module, scheme=scheme, persistent=persistent))
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN"],
        cwd=directory, env=environment, capture_output=True, text=True, timeout=600,
    )
    counts = {word: int(number) for number, word in
              re.findall(r"(\d+) (passed|failed|skipped|errors?)", result.stdout.splitlines()[-1])}
    assert "[]" == (directory / "leaked.json").read_text(), "the project loaded tests/"
    return counts, result.stdout


@pytest.mark.examples
def test_the_shipped_suite_runs_in_a_project_outside_the_repo(tmp_path: Path) -> None:
    """A project that knows nothing of this repo's tests/ (its own directory, its own
    pytest.ini in strict asyncio mode) registers a backend and runs the whole suite, one
    subclass per contract."""
    backend = """
        from pathlib import Path

        from eventlog import register_backend
        from eventlog.storage.files import FileBackend


        def factory(url, *, schema, **options):
            return FileBackend(Path(url.partition("://")[2]))


        register_backend("elsewhere-file", factory)
    """
    counts, output = run_project(tmp_path / "project", "elsewhere", backend, "elsewhere-file")
    assert (0, 0, True) == (counts.get("failed", 0), counts.get("error", 0) + counts.get(
        "errors", 0), counts.get("passed", 0) > 20), output[-3000:]
    assert str(ROOT) not in str(tmp_path)


BROKEN_BACKENDS = {
    "read_all drops an event": """
        from eventlog import register_backend
        from eventlog.storage.memory import MemoryBackend


        class Forgetful(MemoryBackend):
            async def read_all(self, after, limit, tenant_id):
                page, cursor = await super().read_all(after, limit, tenant_id)
                return [event for event in page if event.position != 2], cursor


        register_backend("forgetful", lambda url, *, schema, **options: Forgetful())
    """,
    "append ignores a version conflict": """
        from eventlog import register_backend
        from eventlog.storage.memory import MemoryBackend


        class Careless(MemoryBackend):
            def check(self, request):
                return None


        register_backend("careless", lambda url, *, schema, **options: Careless())
    """,
    "blob_refs_page ignores where it is asked to start": """
        from eventlog import register_backend
        from eventlog.storage.memory import MemoryBackend


        class Restarting(MemoryBackend):
            async def blob_refs_page(self, tenant_id, after, limit):
                return await super().blob_refs_page(tenant_id, b"", limit)


        register_backend("restarting", lambda url, *, schema, **options: Restarting())
    """,
}
SCHEMES = {"read_all drops an event": ("forgetful", "TestMyEvents"),
           "append ignores a version conflict": ("careless", "TestMyEvents"),
           "blob_refs_page ignores where it is asked to start": ("restarting", "TestMyBlobs")}


@pytest.mark.examples
@pytest.mark.parametrize("flaw", sorted(BROKEN_BACKENDS))
def test_the_shipped_suite_fails_a_broken_backend(tmp_path: Path, flaw: str) -> None:
    """A backend that loses an event, writes over a version conflict or pages its blob
    counts wrong fails the suite, in the suite of the contract it breaks."""
    scheme, suite = SCHEMES[flaw]
    counts, output = run_project(tmp_path / "project", scheme, BROKEN_BACKENDS[flaw], scheme,
                                 persistent=False)
    assert counts.get("failed", 0) > 0, output[-3000:]
    assert f" {suite}.test_" in output, output[-3000:]
